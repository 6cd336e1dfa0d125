"""Normalise a remote tool's input schema into one every function-calling API accepts.

Two rules: refuse, never repair; and never weaken. Every validation keyword of JSON Schema
2020-12 that the providers accept is kept at every depth, checked and bounded; a keyword that
constrains values and cannot be carried (``if``/``then``, ``$dynamicRef``, ...) refuses the tool
with the reason; dropping a ``maximum`` would hand a model a weaker contract. Local references
(``$ref`` to ``#/...``, with the root's ``$defs``, as pydantic writes them) are kept and checked
(``references.py``); a network ``$ref`` is never fetched, and refuses the tool. Only annotations
that constrain nothing (``$schema``, ``$comment``, ``readOnly``, vendor keywords) are dropped
(``DROPPED``).
"""

from __future__ import annotations

import importlib
import json
import re
import unicodedata
from typing import Any

import regex

from ..wire.text import clean
from . import references

#: Keywords whose value is one subschema, a list of subschemas, or a map of names to subschemas.
SUBSCHEMA_ONE = ("items", "additionalProperties", "not")
SUBSCHEMA_LIST = ("prefixItems", "allOf", "anyOf", "oneOf")
#: Validation keywords with a number, a count or a flag as their value.
NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
#: Every keyword kept, at every depth (docs/catalogue.md, "What a model is offered").
KEPT = (
    "type",
    "title",
    "description",
    "properties",
    "required",
    *SUBSCHEMA_ONE,
    *SUBSCHEMA_LIST,
    "enum",
    "const",
    *NUMBERS,
    *COUNTS,
    "uniqueItems",
    "pattern",
    "format",
    "default",
    "examples",
    # MCP 2026-07-28: an argument the server also reads as an Mcp-Param-* header. Kept for the
    # transport (execute sends the stored schema along), never offered to a model.
    "x-mcp-header",
    # A local reference; the root's definitions are kept with it (DEFINITIONS).
    "$ref",
)
#: Where a schema's definitions live: kept at the root only, where every ``#/...`` resolves.
DEFINITIONS = ("$defs", "definitions")
#: Keywords that make a schema depend on something this subset cannot express.
REFUSED = (
    "$dynamicRef",
    "$recursiveRef",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "additionalItems",
)
#: Annotations that constrain no value: dropped, since no provider reads them and no argument
#: is valid or invalid because of them. Keywords JSON Schema does not define (vendor ``x-...``)
#: are annotations too, and dropped with these.
DROPPED = (
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
)
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
MAX_DEPTH = 12
#: Subschemas read in a remote schema, kept or not: a 5 MB ``$defs`` is refused before it is walked.
MAX_NODES = 5000
MAX_ENCODED_BYTES = 16 * 1024
#: Caps on remote text and data inside a schema: beyond them a schema is refused (data) or
#: clipped (prose, examples); nothing a model could act on is ever shortened.
MAX_ENUM_VALUES = 1000
MAX_ENUM_STRING = 500
MAX_PATTERN = 1000
#: The most characters a pattern's nested counted repeats may stand for: ``regex`` unrolls
#: them when it compiles, so ``((a{1000}){1000}){1000}`` would take minutes to compile.
MAX_REPEAT_EXPANSION = 10_000
MAX_FORMAT = 64
MAX_TITLE = 200
MAX_DESCRIPTION = 2000
MAX_DATA_BYTES = 2000
MAX_EXAMPLES = 5
MAX_EXAMPLE_BYTES = 500
_FORMAT = re.compile(r"[A-Za-z0-9_.:-]+")
# Values of these keywords are data, not schemas: a "$ref" inside an enum is just a string.
_DATA_KEYWORDS = frozenset(
    {"enum", "const", "default", "examples", "required", "type", "description", "title", "x-mcp-header"}
)
# Values of these keywords map names (remote-chosen, any string) to schemas.
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


class SchemaRefused(ValueError):
    """The schema cannot be represented; the message is the reason an operator reads."""


def normalise_schema(schema: object) -> dict[str, Any]:
    """The kept subset of ``schema``, or ``SchemaRefused`` naming the rule and where it broke."""
    if not isinstance(schema, dict):
        raise SchemaRefused(f"input schema is {_kind(schema)}, not a JSON object")
    if schema.get("type") != "object":
        raise SchemaRefused('input schema\'s top-level "type" must be "object"')
    _scan(schema, "", 1, [0])
    normalised = _normalise(schema, "")
    for key in DEFINITIONS:
        if key in schema:
            normalised[key] = _definitions(schema[key], f"/{key}")
    if contains_nul(normalised):
        raise SchemaRefused("input schema contains a NUL character, which cannot be stored")
    try:
        encoded = len(
            json.dumps(normalised, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        )
    except ValueError:
        raise SchemaRefused("input schema contains NaN or infinity, which JSON cannot carry") from None
    except UnicodeEncodeError:
        raise SchemaRefused("input schema contains an unpaired surrogate, which cannot be stored") from None
    if encoded > MAX_ENCODED_BYTES:
        raise SchemaRefused(
            f"input schema is {encoded} bytes encoded; at most {MAX_ENCODED_BYTES} (16 KiB) are accepted"
        )
    try:
        references.check(normalised, _where)
    except references.ReferenceProblem as exc:
        raise SchemaRefused(f"input schema cannot be kept: {exc}") from None
    return normalised


def _definitions(value: object, at: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SchemaRefused(f"{at[1:]!r} at / is {_kind(value)}, not an object of named schemas")
    return {name: _subschema(child, f"{at}/{name}") for name, child in value.items()}


def contains_nul(value: object) -> bool:
    """Whether a NUL is in any string of a JSON value, key or value: PostgreSQL stores none."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(key) or contains_nul(child) for key, child in value.items())
    if isinstance(value, list):
        return any(contains_nul(child) for child in value)
    return False


def _scan(node: dict[str, Any], path: str, depth: int, seen: list[int]) -> None:
    """Refuse a refused keyword, excess depth or size, or a reference that leaves the schema,
    anywhere in the schema, kept part or not."""
    if depth > MAX_DEPTH:
        raise SchemaRefused(f"input schema is nested more than {MAX_DEPTH} levels deep (at {_where(path)})")
    seen[0] += 1
    if seen[0] > MAX_NODES:
        raise SchemaRefused(f"input schema has more than {MAX_NODES} subschemas (at {_where(path)})")
    for key, value in node.items():
        if key in REFUSED:
            raise SchemaRefused(
                f"input schema uses {key!r} at {_where(path)}, which cannot be represented "
                "(schemas are refused, never rewritten)"
            )
        if key in _DATA_KEYWORDS:
            continue
        if key in DEFINITIONS and path:
            # A pointer from the root would still reach them, but a nested $defs also starts a
            # new base for references inside it in some drafts: refused rather than guessed.
            raise SchemaRefused(
                f"input schema has {key!r} at {_where(path)}; only the root's definitions are kept"
            )
        if key == "$ref":
            _reference(value, f"{path}/$ref")
        elif key in _NAMED_SCHEMAS and isinstance(value, dict):
            for name, child in value.items():
                if isinstance(child, dict):
                    _scan(child, f"{path}/{key}/{name}", depth + 1, seen)
        elif isinstance(value, dict):
            _scan(value, f"{path}/{key}", depth + 1, seen)
        elif isinstance(value, list):
            for index, child in enumerate(value):
                if isinstance(child, dict):
                    _scan(child, f"{path}/{key}/{index}", depth + 1, seen)


def _reference(value: object, at: str) -> None:
    if not isinstance(value, str):
        raise SchemaRefused(f'"$ref" at {_where(at)} is {_kind(value)}, not a string')
    if not references.is_local(value):
        raise SchemaRefused(
            f'"$ref" at {_where(at)} points outside the schema ({clean(value, 120)!r}); only '
            '"#/..." pointers are followed, a network reference is never fetched, and the schema '
            "is not offered without it"
        )


def _normalise(node: dict[str, Any], path: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    # In the server's order, so a schema that needs nothing dropped comes back equal.
    for key, value in node.items():
        if key not in KEPT:
            continue
        at = f"{path}/{key}"
        if key == "properties":
            if not isinstance(value, dict):
                raise SchemaRefused(f'"properties" at {_where(at)} is {_kind(value)}, not an object')
            kept[key] = {name: _subschema(child, f"{at}/{name}") for name, child in value.items()}
        elif key in SUBSCHEMA_ONE:
            if key == "items" and isinstance(value, list):
                raise SchemaRefused(
                    f'"items" at {_where(at)} is an array (the draft-07 tuple form); 2020-12 spells '
                    'it "prefixItems", and a schema is refused, never rewritten'
                )
            kept[key] = _subschema(value, at)
        elif key in SUBSCHEMA_LIST:
            if not isinstance(value, list) or not value:
                raise SchemaRefused(f"{key!r} at {_where(at)} must be a non-empty array of schemas")
            kept[key] = [_subschema(child, f"{at}/{index}") for index, child in enumerate(value)]
        else:
            kept[key] = _value(key, value, at)
    _nullable(node, kept, path)
    return kept


def _value(key: str, value: object, at: str) -> Any:
    """The checked value of a keyword that holds data, not schemas."""
    if key == "type":
        return _type(value, at)
    if key == "required":
        return _required(value, at)
    if key == "$ref":
        return value  # checked by _scan (local), and resolved once the schema is whole
    if key in ("title", "description"):
        if not isinstance(value, str):
            raise SchemaRefused(f"{key!r} at {_where(at)} is {_kind(value)}, not a string")
        # Prose a model reads: invisible characters removed and the length clipped.
        return clean(value, MAX_TITLE) if key == "title" else _prose(value, MAX_DESCRIPTION)
    if key == "enum":
        if not isinstance(value, list) or not value:
            raise SchemaRefused(f'"enum" at {_where(at)} must be a non-empty array')
        if len(value) > MAX_ENUM_VALUES:
            raise SchemaRefused(f'"enum" at {_where(at)} has {len(value)} values; at most {MAX_ENUM_VALUES}')
        return [_datum(item, f"{at}/{index}") for index, item in enumerate(value)]
    if key == "const":
        return _datum(value, at)
    if key in NUMBERS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SchemaRefused(
                f"{key!r} at {_where(at)} must be a number (draft-04's boolean form is not 2020-12)"
            )
        if key == "multipleOf" and value <= 0:
            raise SchemaRefused(f'"multipleOf" at {_where(at)} must be greater than 0')
        return value
    if key in COUNTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchemaRefused(f"{key!r} at {_where(at)} must be a non-negative integer")
        return value
    if key == "uniqueItems":
        if not isinstance(value, bool):
            raise SchemaRefused(f'"uniqueItems" at {_where(at)} must be a boolean')
        return value
    if key == "pattern":
        return _pattern(value, at)
    if key == "format":
        if not isinstance(value, str) or not _FORMAT.fullmatch(value) or len(value) > MAX_FORMAT:
            raise SchemaRefused(f'"format" at {_where(at)} must be a format name (letters, digits, -_.:)')
        return value
    if key == "x-mcp-header":
        if not isinstance(value, str) or len(value) > MAX_FORMAT:
            raise SchemaRefused(f'"x-mcp-header" at {_where(at)} must be a header name')
        return value
    if key == "default":
        return _bounded(value, at)
    # examples: a hint, clipped to a few short ones rather than refused.
    if not isinstance(value, list):
        raise SchemaRefused(f'"examples" at {_where(at)} must be an array')
    short = [item for item in value if _encoded_size(item) <= MAX_EXAMPLE_BYTES and not contains_nul(item)]
    return [_bounded(item, at) for item in short[:MAX_EXAMPLES]]


def _nullable(node: dict[str, Any], kept: dict[str, Any], path: str) -> None:
    """OpenAPI 3.0's ``nullable: true`` (FastAPI, pydantic v1) said in 2020-12: "null" in the type."""
    if "nullable" not in node:
        return
    flag = node["nullable"]
    if not isinstance(flag, bool):
        raise SchemaRefused(f'"nullable" at {_where(path + "/nullable")} must be a boolean')
    kind = kept.get("type")
    if not flag or kind is None:
        return  # false constrains nothing; with no type, null is already allowed by type
    kinds = [kind] if isinstance(kind, str) else list(kind)
    if "null" not in kinds:
        kept["type"] = [*kinds, "null"]


def _datum(value: object, at: str) -> Any:
    """An enum or const value, its text exactly as the server will compare it."""
    if isinstance(value, dict | list):
        _bounded(value, at)
        children = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in children:
            if isinstance(key, str):
                _datum(key, at)
            _datum(child, f"{at}/{key}")
        return value
    if isinstance(value, str):
        if len(value) > MAX_ENUM_STRING:
            raise SchemaRefused(f"value at {_where(at)} is longer than {MAX_ENUM_STRING} characters")
        if _has_invisible(value):
            # Cleaning it would offer a value the server does not accept.
            raise SchemaRefused(f"value at {_where(at)} contains control or format characters")
    return value


def _bounded(value: object, at: str) -> Any:
    if _encoded_size(value) > MAX_DATA_BYTES:
        raise SchemaRefused(f"value at {_where(at)} is more than {MAX_DATA_BYTES} bytes encoded")
    return value


def _pattern(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise SchemaRefused(f'"pattern" at {_where(at)} is {_kind(value)}, not a string')
    if len(value) > MAX_PATTERN:
        raise SchemaRefused(f'"pattern" at {_where(at)} is longer than {MAX_PATTERN} characters')
    if _has_invisible(value):
        raise SchemaRefused(f'"pattern" at {_where(at)} contains control or format characters')
    # Compiled by both engines that read it: Python's re (jsonschema's schema check) and regex
    # (the bounded match, nr_llm/tools/arguments.py), after re's parse showed regex can compile it fast.
    try:
        expansion = _expansion(_sre_parser.parse(value))
        if expansion > MAX_REPEAT_EXPANSION:
            raise SchemaRefused(
                f'"pattern" at {_where(at)} nests counted repeats standing for {expansion} characters; '
                f"at most {MAX_REPEAT_EXPANSION}"
            )
        re.compile(value)
        regex.compile(value)
    except (re.error, regex.error, OverflowError, RecursionError) as exc:
        raise SchemaRefused(
            f'"pattern" at {_where(at)} is not a regular expression Python reads ({clean(exc)})'
        ) from None
    return value


# re's own parser (public as sre_parse until 3.11, deprecated since): the tree of a pattern.
_sre_parser: Any = importlib.import_module("re._parser")
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _expansion(pattern: Any) -> int:
    """The largest product of nested counted repeats in a parsed pattern (unbounded counts as its minimum)."""
    worst = 1
    for op, argument in pattern:
        if str(op) in _REPEATS:
            low, high, inner = argument
            factor = max(low, 1) if high == _sre_parser.MAXREPEAT else high
            worst = max(worst, factor * _expansion(inner))
        else:
            for child in _subpatterns(argument):
                worst = max(worst, _expansion(child))
    return worst


def _subpatterns(argument: Any) -> list[Any]:
    if isinstance(argument, _sre_parser.SubPattern):
        return [argument]
    if isinstance(argument, tuple | list):
        return [found for item in argument for found in _subpatterns(item)]
    return []


def _subschema(value: object, path: str) -> Any:
    # JSON Schema allows true/false as schemas ("anything" / "nothing"); keep them as they are.
    if isinstance(value, bool):
        return value
    if not isinstance(value, dict):
        raise SchemaRefused(f"schema at {_where(path)} is {_kind(value)}, not an object or boolean")
    return _normalise(value, path)


def _type(value: object, path: str) -> str | list[str]:
    if isinstance(value, str) and value in JSON_TYPES:
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, str) and item in JSON_TYPES for item in value)
        and len(set(value)) == len(value)
    ):
        return list(value)
    raise SchemaRefused(
        f'"type" at {_where(path)} must be one of {", ".join(sorted(JSON_TYPES))} '
        "or a non-empty list of distinct ones"
    )


def _required(value: object, path: str) -> list[str]:
    if (
        isinstance(value, list)
        and all(isinstance(item, str) for item in value)
        and len(set(value)) == len(value)
    ):
        return list(value)
    raise SchemaRefused(f'"required" at {_where(path)} must be an array of distinct property names')


def _prose(text: str, limit: int) -> str:
    """``text`` without control or format characters (line breaks and tabs kept), clipped."""
    kept = "".join(char for char in text if char in "\n\t" or not _invisible(char))
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def _has_invisible(text: str) -> bool:
    return any(_invisible(char) for char in text)


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Cf", "Cs")


def _encoded_size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def _where(path: str) -> str:
    # A JSON Pointer into the remote schema; its property names are remote text.
    return clean(path or "/", 120)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
