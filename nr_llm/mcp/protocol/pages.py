"""Walking a paginated list (``resources/list``, ``prompts/list`` ...) inside one operation.

Cursors are followed as for ``tools/list``: at most ``MAX_PAGES`` pages, a repeated cursor is a
malformed answer (the walk would never end), and every page is a leg of the same budget.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..wire.errors import McpTransportError
from . import modern

MAX_PAGES = 50
# The most items of one kind a walk keeps: a server advertising more is refused whole, since a
# clipped catalogue would look complete to an operator.
MAX_ITEMS = 5_000


class Conversation(Protocol):
    def request(
        self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[dict[str, Any], int]: ...

    def malformed(self, what: str) -> McpTransportError: ...


def walk(conversation: Conversation, method: str, key: str) -> tuple[list[dict[str, Any]], int]:
    """Every object of every page of ``method``'s ``key`` list, and the last leg's latency."""
    items: list[dict[str, Any]] = []
    seen: set[str] = set()
    cursor: str | None = None
    latency_ms = 0
    for _page in range(MAX_PAGES):
        result, latency_ms = conversation.request(method, {} if cursor is None else {"cursor": cursor})
        page = result.get(key)
        if not isinstance(page, list):
            raise conversation.malformed(f"sent a {method} page without a {key} list")
        items.extend(item for item in page if isinstance(item, dict))
        if len(items) > MAX_ITEMS:
            raise conversation.malformed(f"advertises more than {MAX_ITEMS} {key}")
        cursor = result.get("nextCursor")
        if cursor is None:
            return items, latency_ms
        if not isinstance(cursor, str):
            raise conversation.malformed("sent a nextCursor that is not a string")
        if cursor in seen:
            raise conversation.malformed(f"repeated a {method} cursor; the list would never end")
        seen.add(cursor)
    raise conversation.malformed(f"advertises more than {MAX_PAGES} pages of {key}")


def walk_if_offered(conversation: Conversation, method: str, key: str) -> tuple[list[dict[str, Any]], int]:
    """``walk``, where a server that does not offer the feature (-32601) has none of it."""
    try:
        return walk(conversation, method, key)
    except McpTransportError as exc:
        if exc.kind == "rpc_error" and exc.code == modern.METHOD_NOT_FOUND:
            return [], 0
        raise
