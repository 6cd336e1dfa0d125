"""Resources, prompts and completion: what the server answers, kept as tool results are.

``resources/read`` contents become embedded-resource blocks shaped by content.py (text clipped,
blobs decoded strictly, every block and the whole answer capped), so a 50 MB resource or a blob
that does not decode is a note, never an exception. ``prompts/get`` messages keep their role and
one content block each, under the same caps, and at most ``MAX_PROMPT_MESSAGES`` of them.
Completion values are cleaned strings, at most the 100 the specification allows.

Resource not found: ``-32002`` (the 2025 revisions) and ``-32602`` naming the URI in its data
(SEP-2164, 2026-07-28) are both the kind ``resource_not_found``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..wire.errors import McpTransportError
from ..wire.text import MESSAGE_LIMIT, NAME_LIMIT, clean
from .content import DEFAULT_LIMITS, ContentLimits, shape_blocks, text_of
from .modern import INVALID_PARAMS
from .results import Block, CallOutcome

LEGACY_RESOURCE_NOT_FOUND = -32002
MAX_PROMPT_MESSAGES = 500
MAX_COMPLETION_VALUES = 100
_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class PromptMessage:
    role: str
    content: Block


@dataclass(frozen=True)
class PromptOutcome:
    """A filled prompt: its messages in MCP shape (cleaned, capped), what was dropped in ``notes``."""

    description: str
    messages: tuple[PromptMessage, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Completion:
    values: tuple[str, ...]
    total: int | None = None
    has_more: bool = False


def resource_outcome(
    result: dict[str, Any], server: str, limits: ContentLimits = DEFAULT_LIMITS
) -> CallOutcome:
    contents = result.get("contents")
    if not isinstance(contents, list):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent resource contents that are not a list."
        )
    blocks, notes = shape_blocks([{"type": "resource", "resource": item} for item in contents], limits)
    return CallOutcome(text=text_of(blocks, notes), is_error=False, content=tuple(blocks), notes=tuple(notes))


def prompt_outcome(
    result: dict[str, Any], server: str, limits: ContentLimits = DEFAULT_LIMITS
) -> PromptOutcome:
    raw = result.get("messages")
    if not isinstance(raw, list):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent prompt messages that are not a list."
        )
    notes: list[str] = []
    if len(raw) > MAX_PROMPT_MESSAGES:
        notes.append(f"the prompt's {len(raw)} messages were cut to the first {MAX_PROMPT_MESSAGES}")
        raw = raw[:MAX_PROMPT_MESSAGES]
    roles: list[str] = []
    contents: list[object] = []
    for message in raw:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            notes.append(f"a prompt message with role {clean(role, NAME_LIMIT)!r} was not passed on")
            continue
        assert isinstance(message, dict)
        roles.append(str(role))
        contents.append(message.get("content"))
    # Shaped together, so the whole prompt shares the answer's cap; a dropped block drops its message.
    kept_roles: list[str] = []
    kept_blocks: list[Block] = []
    for role, content in zip(roles, contents, strict=True):
        blocks, block_notes = shape_blocks([content], limits)
        notes.extend(block_notes)
        if blocks:
            kept_roles.append(role)
            kept_blocks.append(blocks[0])
    total = sum(len(str(block)) for block in kept_blocks)
    if total > limits.total_bytes:
        raise McpTransportError(
            "too_large",
            server,
            f"MCP server {server!r} sent a prompt over the {limits.total_bytes}-byte cap.",
        )
    description = result.get("description")
    return PromptOutcome(
        description=clean(description, MESSAGE_LIMIT * 5) if isinstance(description, str) else "",
        messages=tuple(
            PromptMessage(role, block) for role, block in zip(kept_roles, kept_blocks, strict=True)
        ),
        notes=tuple(notes),
    )


def completion_of(result: dict[str, Any], server: str) -> Completion:
    completion = result.get("completion")
    if not isinstance(completion, dict) or not isinstance(completion.get("values"), list):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent a completion without values."
        )
    values = tuple(
        clean(value, MESSAGE_LIMIT * 5)
        for value in completion["values"][:MAX_COMPLETION_VALUES]
        if isinstance(value, str)
    )
    total = completion.get("total")
    return Completion(
        values=values,
        total=total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None,
        has_more=completion.get("hasMore") is True,
    )


def not_found(exc: McpTransportError, uri: str) -> McpTransportError | None:
    """``exc`` read as "resource not found" (-32002, or SEP-2164's -32602), else None."""
    if exc.kind != "rpc_error":
        return None
    data = exc.data if isinstance(exc.data, dict) else {}
    legacy = exc.code == LEGACY_RESOURCE_NOT_FOUND
    sep_2164 = exc.code == INVALID_PARAMS and data.get("uri") == uri
    if not (legacy or sep_2164):
        return None
    return McpTransportError(
        "resource_not_found",
        exc.server,
        f"MCP server {exc.server!r} has no resource {clean(uri, NAME_LIMIT)!r} (code {exc.code}).",
        http_status=exc.http_status,
        code=exc.code,
        data=exc.data,
    )
