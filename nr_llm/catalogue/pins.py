"""Pinned tool definitions: what an operator enabled, compared with what a server now sends.

Each tool's description, title, schemas and annotations are fingerprinted as the server sent
them (``imports.raw_definition``), not as this package normalised them, so a better normaliser
never disables a tool its server did not change. An enabled tool whose fingerprint changes is
disabled by the import that stores the new text (``decide``), until an operator reads the change
(``review``) and enables it again (``accept_definition``). Enabling and disabling take the same
server lock as an import's reconcile.

A pin not taken as sent (``pinned_raw`` false: stored under the schema rule before migration
0007) is compared as it stands, so it reads as changed and goes to the operator's review: a
tool is never kept enabled on a definition nobody compared with what its server sends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from ..models import McpServer, McpTool

#: The parts of a definition, as MCP names them, and as an operator reads them.
PARTS = {
    "title": "title",
    "description": "description",
    "inputSchema": "input schema",
    "outputSchema": "output schema",
    "annotations": "annotations",
}


def fingerprint(definition: dict[str, Any]) -> str:
    """SHA-256 of ``definition`` as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def changed_parts(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    """Which parts (PARTS keys) differ between two definitions, in PARTS order.

    Compared as values, as an import compares a row with what it fetched: a stored pin has been
    through the database's JSON (PostgreSQL writes 1e2 back as 100), the fetched text has not.
    """
    return tuple(part for part in PARTS if old.get(part) != new.get(part))


class Fetched(Protocol):
    """The part of an imported tool its pin is decided on."""

    @property
    def raw(self) -> dict[str, Any]: ...


def decide(row: McpTool, tool: Fetched, fresh: dict[str, Any]) -> tuple[str, ...]:
    """Decide ``row``'s pin for the imported ``tool``; the changed parts when it must be disabled.

    An enabled tool keeps the definition an operator enabled: a different one disables it. One
    awaiting review keeps the pin it was enabled with, so its page shows everything since. Any
    other disabled tool simply follows its server. A pin is compared with what the server sent.
    """
    if row.enabled:
        pinned, now = _comparable(row, tool)
        parts = changed_parts(pinned, now)
        if parts:
            fresh.update(pinned_definition=pinned, pinned_fingerprint=fingerprint(pinned))
            return parts
    elif row.awaiting_review:
        return ()
    fresh.update(
        pinned_definition=tool.raw, pinned_fingerprint=fresh["definition_fingerprint"], pinned_raw=True
    )
    return ()


def _comparable(row: McpTool, tool: Fetched) -> tuple[dict[str, Any], dict[str, Any]]:
    """The row's pin, and the imported definition as the server sent it."""
    if row.pinned_fingerprint:
        return row.pinned_definition, tool.raw
    # A row from before pinning has no pin yet: what it stored stands in for one; the parts it
    # did not store then (title, output schema) are taken as they come, not held against it.
    return {**tool.raw, **_stored_then(row)}, tool.raw


def review(row: McpTool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The definition an operator enabled and the current one, comparable part by part (admin)."""
    return row.pinned_definition, row.raw_definition or row.definition


def _stored_then(row: McpTool) -> dict[str, Any]:
    return {
        "description": row.description,
        "inputSchema": row.input_schema,
        "annotations": row.remote_annotations,
    }


@dataclass(frozen=True)
class Switched:
    """What enabling (or disabling) a selection of tools did."""

    count: int
    #: Left disabled: gone from their server.
    orphaned: int = 0
    #: Left disabled: their definition changed; each is enabled on its own page, after reading.
    to_review: tuple[str, ...] = ()


def enable_tools(tool_ids: Iterable[int]) -> Switched:
    """Enable the given tools, except orphans and tools whose definition awaits review."""
    with _servers_locked(tool_ids) as rows:
        orphans = [row for row in rows if row.orphaned and not row.enabled]
        review = sorted(row.tool_name for row in rows if row.awaiting_review and not row.orphaned)
        chosen = [row for row in rows if not (row.enabled or row.orphaned or row.awaiting_review)]
        for row in chosen:
            _accept(row)
        McpTool.objects.bulk_update(chosen, _ACCEPTED_FIELDS)
    return Switched(len(chosen), len(orphans), tuple(review))


def disable_tools(tool_ids: Iterable[int]) -> Switched:
    with _servers_locked(tool_ids) as rows:
        ids = [row.pk for row in rows if row.enabled]
        # update() skips auto_now; a switch is an operator's edit, so it sets ``updated`` itself.
        McpTool.objects.filter(pk__in=ids).update(enabled=False, updated=timezone.now())
    return Switched(len(ids))


def accept_definition(tool_id: int, reviewed: str) -> str:
    """Enable one tool, its current definition becoming the pinned one; "" or why not.

    ``reviewed`` is the fingerprint of the definition the operator read: if an import changed it
    meanwhile, what they read is not what would be enabled, and nothing changes.
    """
    with _servers_locked([tool_id]) as rows:
        if not rows:
            return "the tool no longer exists"
        (row,) = rows
        if row.orphaned:
            return "it is gone from its server's catalogue"
        if row.definition_fingerprint != reviewed:
            return "its definition changed again while you read it; read it again"
        _accept(row)
        McpTool.objects.bulk_update([row], _ACCEPTED_FIELDS)
    return ""


_ACCEPTED_FIELDS = [
    "enabled",
    "pinned_definition",
    "pinned_fingerprint",
    "pinned_raw",
    "disabled_reason",
    "disabled_at",
    "updated",
]


def _accept(row: McpTool) -> None:
    row.enabled = True
    # A row no import has stored a raw definition for yet (from before 0007) pins what it stored.
    row.pinned_raw = bool(row.raw_definition)
    row.pinned_definition = row.raw_definition or row.definition
    row.pinned_fingerprint = row.definition_fingerprint or fingerprint(row.pinned_definition)
    row.definition_fingerprint = row.pinned_fingerprint
    row.disabled_reason = ""
    row.disabled_at = None
    row.updated = timezone.now()


@contextlib.contextmanager
def _servers_locked(tool_ids: Iterable[int]) -> Iterator[list[McpTool]]:
    """The tools, re-read under their servers' row locks: an import reconciling one of those
    servers either finished before or waits until the switch is committed."""
    ids = list(tool_ids)
    with transaction.atomic():
        servers = McpTool.objects.filter(pk__in=ids).order_by().values_list("server_id", flat=True).distinct()
        # In pk order: two switches over the same servers never wait for each other in a circle.
        list(
            McpServer.objects.select_for_update()
            .filter(pk__in=list(servers))
            .order_by("pk")
            .values_list("pk")
        )
        yield list(McpTool.objects.filter(pk__in=ids).order_by("tool_name"))
