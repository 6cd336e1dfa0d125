"""A ``tools/call`` result as models take it: content blocks kept in MCP shape, cleaned and capped.

What a server answers is untrusted: every block is rebuilt from the fields MCP defines (nothing
else passes), text is stripped of control characters, base64 must decode, a MIME type must be a
plain ``type/subtype`` of the block's kind, and each block and the whole answer are capped. What
is dropped is named in a note that LEADS the text, so a model (or a person) reading a clipped
answer still sees it; an unknown block type is named, never dropped silently.

Structured content is kept bounded (depth, size) and checked against the tool's ``outputSchema``
by ``conform``: a mismatch is an error outcome naming the first mismatch, never a silent pass,
and an ``isError`` answer is never turned into a success by it.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
import referencing.exceptions
from jsonschema.exceptions import SchemaError

from ..wire.errors import McpTransportError
from ..wire.text import MESSAGE_LIMIT, NAME_LIMIT, clean
from .results import Block, CallOutcome

BLOCK_TYPES = ("text", "image", "audio", "resource_link", "resource")
DEFAULT_BLOCK_BYTES = 1_048_576
DEFAULT_TOTAL_BYTES = 2_097_152
#: Deeper structured content is not kept: it would exhaust the validator's recursion, and no
#: honest answer nests this far.
STRUCTURED_DEPTH = 64
URI_LIMIT = 2_048

# A MIME type is a bare "type/subtype": no parameters, no commas, no spaces, so it can never
# smuggle a second data URL or an attribute into the places it is written (data URLs, HTML).
_MIME = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")
# An image a browser may execute script in (SVG) is not passed on.
_SCRIPTABLE = frozenset({"image/svg+xml", "image/svg"})
# Control characters out (Cc, bidi overrides): a model reads line breaks and tabs, nothing else.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class ContentLimits:
    """Caps on one answer: ``block_bytes`` per block (text characters, decoded bytes of an image,
    audio or blob, serialised structured content), ``total_bytes`` for all blocks together."""

    block_bytes: int = DEFAULT_BLOCK_BYTES
    total_bytes: int = DEFAULT_TOTAL_BYTES


DEFAULT_LIMITS = ContentLimits()


class _Dropped(Exception):
    """A block that is not passed on; the message is the note's reason."""


@dataclass
class _Shaping:
    limits: ContentLimits
    used: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)

    def spend(self, size: int, what: str) -> None:
        if size > self.limits.block_bytes:
            raise _Dropped(f"{what} of {size} bytes is over the {self.limits.block_bytes}-byte block cap")
        if self.used + size > self.limits.total_bytes:
            raise _Dropped(f"{what} would take the answer over its {self.limits.total_bytes}-byte cap")
        self.used += size


def outcome_of(
    result: dict[str, Any],
    server: str,
    output_schema: dict[str, Any] | None = None,
    limits: ContentLimits = DEFAULT_LIMITS,
) -> CallOutcome:
    """The outcome of a ``tools/call`` result; with ``output_schema``, structured content checked."""
    content = result.get("content", [])
    if not isinstance(content, list):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent tool content that is not a list."
        )
    shaping = _Shaping(limits)
    blocks: list[Block] = []
    for block in content:
        kept = _block(block, shaping)
        if kept is not None:
            blocks.append(kept)
    structured = _bounded_structured(result, shaping)
    is_error = result.get("isError") is True
    text = _text(blocks, structured, shaping.notes)
    outcome = CallOutcome(
        text=text, is_error=is_error, content=tuple(blocks), structured=structured, notes=tuple(shaping.notes)
    )
    return conform_outcome(outcome, output_schema) if output_schema else outcome


def conform_outcome(outcome: CallOutcome, output_schema: dict[str, Any] | None) -> CallOutcome:
    """``outcome`` judged against the tool's declared output schema (None or {}: none declared).

    Declared: a success must carry conforming structured content, else it becomes an error
    outcome naming the first mismatch. Not declared: structured content is not kept (a model's
    code was promised no shape). An ``isError`` answer stays the server's error, untouched.
    """
    if outcome.is_error or not output_schema:
        return dataclasses.replace(outcome, structured=None)
    mismatch = _mismatch(outcome.structured, output_schema)
    if not mismatch:
        return outcome
    why = [note for note in outcome.notes if note.startswith("structured content")]
    if outcome.structured is None and why:
        mismatch = clean(f"{mismatch}: {why[0]}")
    text = f"the server's answer did not match its declared output schema: {mismatch}"
    # Nothing of an answer that broke its contract reaches a model but the reason.
    return dataclasses.replace(
        outcome, text=text, is_error=True, content=(), structured=None, mismatch=mismatch
    )


def masked_outcome(outcome: CallOutcome, mask: Callable[[str], str]) -> CallOutcome:
    """``outcome`` with ``mask`` applied to every text a model or a person reads (not to base64)."""
    return dataclasses.replace(
        outcome,
        text=mask(outcome.text),
        content=tuple(_masked_value(block, mask) for block in outcome.content),
        structured=_masked_value(outcome.structured, mask),
    )


def data_url(block: Block) -> str:
    """An image or audio block as a data URL (its MIME type was checked when it was kept)."""
    return f"data:{block['mimeType']};base64,{block['data']}"


def json_text(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


# -- blocks -----------------------------------------------------------------------------


def _block(block: object, shaping: _Shaping) -> Block | None:
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(block, dict) or kind not in BLOCK_TYPES:
        named = f"type {clean(kind, NAME_LIMIT)!r}" if isinstance(kind, str) else "no type"
        shaping.notes.append(f"a content block of {named} was not passed on: this client does not know it")
        return None
    try:
        if kind == "text":
            return {"type": "text", "text": _clipped_text(block.get("text"), shaping, "a text block")}
        if kind in ("image", "audio"):
            return _binary(block, kind, shaping)
        if kind == "resource_link":
            return _link(block, shaping)
        return _resource(block, shaping)
    except _Dropped as dropped:
        shaping.notes.append(f"{_article(kind)} {kind} block was dropped: {dropped}")
        return None


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


def _clipped_text(value: object, shaping: _Shaping, what: str) -> str:
    if not isinstance(value, str):
        raise _Dropped("its text is not a string")
    limit = shaping.limits.block_bytes
    if len(value) > limit:
        shaping.notes.append(f"{what} was clipped at {limit} characters")
        value = value[:limit]
    shaping.spend(len(value), what)
    return _CONTROL.sub("", value)


def _mime(value: object, kinds: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise _Dropped("it has no MIME type")
    mime = value.strip().lower()
    if not _MIME.fullmatch(mime):
        raise _Dropped(f"its MIME type {clean(value, 60)!r} is not a plain type/subtype")
    if kinds and mime.split("/", 1)[0] not in kinds:
        raise _Dropped(f"its MIME type {mime!r} is not {' or '.join(kinds)}")
    if mime in _SCRIPTABLE:
        raise _Dropped(f"{mime} can carry script")
    return mime


def _base64(value: object, shaping: _Shaping, what: str) -> tuple[str, int]:
    """(the payload, its decoded size), or dropped. Strict decoding admits only the base64
    alphabet and correct padding, so the payload is passed on as sent, never re-encoded."""
    if not isinstance(value, str):
        raise _Dropped("its data is not a base64 string")
    # Sized before decoding: 50 MB of base64 is refused without decoding a byte of it.
    estimate = len(value) * 3 // 4
    if estimate > shaping.limits.block_bytes:
        raise _Dropped(
            f"{what} of about {estimate} bytes is over the {shaping.limits.block_bytes}-byte block cap"
        )
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _Dropped("its data is not valid base64") from None
    if not raw:
        raise _Dropped("its data is empty")
    shaping.spend(len(raw), what)
    return value, len(raw)


def _binary(block: dict[str, Any], kind: str, shaping: _Shaping) -> Block:
    mime = _mime(block.get("mimeType"), (kind,))
    data, _ = _base64(block.get("data"), shaping, f"the {kind}")
    return {"type": kind, "data": data, "mimeType": mime}


def _uri(value: object) -> str:
    """Any scheme is kept: a URI here is an identifier the server gave (file:, custom schemes),
    never a link followed or rendered by this package. Where one becomes a link (admin HTML),
    ``nr_llm.catalogue.links.safe_href`` renders the dangerous schemes inert."""
    if not isinstance(value, str) or not value.strip():
        raise _Dropped("it has no URI")
    uri = _CONTROL.sub("", value).strip()
    if len(uri) > URI_LIMIT:
        raise _Dropped(f"its URI is longer than {URI_LIMIT} characters")
    return uri


def _optional_text(block: dict[str, Any], key: str, limit: int) -> dict[str, str]:
    value = block.get(key)
    return {key: clean(value, limit)} if isinstance(value, str) and value else {}


def _link(block: dict[str, Any], shaping: _Shaping) -> Block:
    uri = _uri(block.get("uri"))
    name = block.get("name")
    kept: Block = {"type": "resource_link", "uri": uri, "name": clean(name if isinstance(name, str) else uri)}
    kept |= _optional_text(block, "title", NAME_LIMIT) | _optional_text(block, "description", MESSAGE_LIMIT)
    if block.get("mimeType") is not None:
        kept["mimeType"] = _mime(block.get("mimeType"), ())
    size = block.get("size")
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        kept["size"] = size
    shaping.spend(len(json_text(kept)), "a resource link")
    return kept


def _resource(block: dict[str, Any], shaping: _Shaping) -> Block:
    inner = block.get("resource")
    if not isinstance(inner, dict):
        raise _Dropped("it has no resource object")
    kept: dict[str, Any] = {"uri": _uri(inner.get("uri"))}
    if inner.get("mimeType") is not None:
        kept["mimeType"] = _mime(inner.get("mimeType"), ())
    if "text" in inner:
        kept["text"] = _clipped_text(inner.get("text"), shaping, "an embedded resource's text")
    elif "blob" in inner:
        kept["blob"], _ = _base64(inner.get("blob"), shaping, "the embedded resource")
    else:
        raise _Dropped("its resource has neither text nor blob")
    return {"type": "resource", "resource": kept}


def shape_blocks(
    blocks: list[object], limits: ContentLimits = DEFAULT_LIMITS
) -> tuple[list[Block], list[str]]:
    """Content blocks kept as a tool result's are (rebuilt, cleaned, capped), with the notes of
    what was dropped: for resource contents and prompt messages, which carry the same blocks."""
    shaping = _Shaping(limits)
    kept = [block for block in (_block(raw, shaping) for raw in blocks) if block is not None]
    return kept, shaping.notes


def text_of(blocks: list[Block], notes: list[str]) -> str:
    """The blocks as one text for a text reader, notes first (as a tool result's ``text``)."""
    return _text(blocks, None, notes)


# -- structured content ----------------------------------------------------------------


def _bounded_structured(result: dict[str, Any], shaping: _Shaping) -> Any:
    if "structuredContent" not in result:
        return None
    value = result["structuredContent"]
    if not isinstance(value, dict):
        shaping.notes.append("structured content that is not a JSON object was not kept")
        return None
    if _deeper_than(value, STRUCTURED_DEPTH):
        shaping.notes.append(f"structured content nested deeper than {STRUCTURED_DEPTH} levels was not kept")
        return None
    size = len(json_text(value))
    if size > shaping.limits.block_bytes:
        shaping.notes.append(
            f"structured content of {size} characters is over the {shaping.limits.block_bytes}-byte block cap"
        )
        return None
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Iterative, so a hostile nesting cannot exhaust the interpreter's recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """A validator per schema, built once: checking the schema against its metaschema costs
    fifty times the check of a typical answer (bench/result_content.py)."""
    schema = json.loads(schema_json)
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator_class.check_schema(schema)
    return validator_class(schema)


def _mismatch(structured: Any, schema: dict[str, Any]) -> str:
    """The first way ``structured`` misses ``schema``; "" when it conforms."""
    if structured is None:
        return "it sent no structured content that could be kept"
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
        # Lazy: the walk stops at the first error, so a long list of failures costs one.
        error = next(iter(validator.iter_errors(structured)), None)
    except (SchemaError, referencing.exceptions.Unresolvable) as exc:
        return f"its output schema cannot be used to check it ({clean(type(exc).__name__, NAME_LIMIT)})"
    except RecursionError:
        return "its output schema nests too deeply to check it"
    if error is None:
        return ""
    where = "".join(f"[{part!r}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
    return clean(f"at ${where}: {error.message}")


# -- text ------------------------------------------------------------------------------


def _text(blocks: list[Block], structured: Any, notes: list[str]) -> str:
    """The answer as one text: blocks in order (non-text ones as a bracketed line), notes first."""
    lines: list[str] = []
    has_text = False
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            lines.append(block["text"])
            has_text = True
        elif kind in ("image", "audio"):
            data = block["data"]
            size = len(data) * 3 // 4 - data[-2:].count("=")
            lines.append(f"[{kind}: {block['mimeType']}, {size} bytes]")
        elif kind == "resource_link":
            lines.append(f"[resource link: {block['name']} <{block['uri']}>]")
        else:
            resource = block["resource"]
            if "text" in resource:
                lines.append(f"[resource {resource['uri']}]\n{resource['text']}")
                has_text = True
            else:
                mime = resource.get("mimeType", "application/octet-stream")
                lines.append(f"[resource {resource['uri']}: {mime}, not text]")
    if not has_text and structured is not None:
        # A tool that answers in structured form still tells a text reader something.
        lines.append(json_text(structured))
    if notes:
        lines.insert(0, "[" + "; ".join(notes) + "]")
    return "\n".join(lines)


def _masked_value(value: Any, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, list):
        return [_masked_value(item, mask) for item in value]
    if isinstance(value, dict):
        # Base64 payloads are not text: masking could only corrupt them.
        return {
            key: item if key in ("data", "blob") else _masked_value(item, mask) for key, item in value.items()
        }
    return value
