"""Import a server's tool catalogue: walk it, validate every tool, reconcile the rows.

The walk is network I/O and happens outside any transaction; only the reconcile holds
the server row locked, so a slow server never holds a database lock, yet two imports of
one server still serialize where it matters. A refusal changes nothing but the server's
import status and reason.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from django.db import IntegrityError, transaction
from django.utils import timezone

from . import tools
from .authorization import runtime as authorization
from .endpoints import endpoint_for, mcp_client
from .mcp import Endpoint, McpTransportError
from .mcp.names import InvalidToolName, checked_local_name
from .mcp.schema import SchemaRefused, contains_nul, normalise_schema
from .mcp.text import clean
from .models import ImportStatus, McpServer, McpTool
from .redaction import redact

MAX_TOOLS = 500
#: A remote description is text a model reads on every request; more than this is not a description.
MAX_DESCRIPTION = 4000
#: Unicode categories removed from a description: controls, format (bidi) and surrogates.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})

_SYNCED_FIELDS = (
    "remote_name",
    "description",
    "input_schema",
    "remote_annotations",
    "orphaned",
    "orphaned_at",
)


@dataclass(frozen=True)
class ImportReport:
    identifier: str
    imported: int
    #: Advertised tools not imported; ``skip_reasons`` says why (one reason may cover several).
    skipped: int
    #: Tools of this server that are no longer advertised (kept, never deleted).
    orphaned: int
    skip_reasons: tuple[str, ...]
    refused: str = ""

    @property
    def ok(self) -> bool:
        return not self.refused

    @property
    def status(self) -> Literal["ok", "partial", "error"]:
        if self.refused:
            return "error"
        return "partial" if self.skipped else "ok"


@dataclass(frozen=True)
class ImportProgress:
    """What a long import reports while it runs (the command shows it on a terminal)."""

    identifier: str
    stage: Literal["walking", "page", "walked", "reconciled"]
    tools: int = 0
    pages: int = 0


Progress = Callable[[ImportProgress], None]


class CatalogueClient(Protocol):
    """The part of ``McpClient`` an import needs."""

    def list_tools(
        self, endpoint: Endpoint, on_page: Callable[[int, int], None] | None = None
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class _Accepted:
    tool_name: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]


def import_catalogue(
    server: McpServer, client: CatalogueClient | None = None, progress: Progress | None = None
) -> ImportReport:
    """Import ``server``'s catalogue; the report says what happened, a refusal included."""
    if not server.data_class:
        return _refuse(server, "no data class is declared; declare what data this server may see first")
    if not server.url:
        return _refuse(server, "no URL is configured")
    on_page = None
    if progress:
        progress(ImportProgress(server.identifier, "walking"))

        def on_page(pages: int, count: int) -> None:
            progress(ImportProgress(server.identifier, "page", count, pages))

    endpoint = endpoint_for(server)
    try:
        advertised = (client or mcp_client()).list_tools(endpoint, on_page=on_page)
    except McpTransportError as exc:
        authorization.observe(server, exc)
        # The client's message already tells a spent budget apart from a server that
        # failed; say where this installation sets the number, since only it can raise it.
        reason = redact(str(exc), endpoint.credential)
        if exc.kind in ("deadline_exhausted", "timeout"):
            where = (
                "this server's operation budget"
                if server.operation_timeout
                else "NR_LLM_MCP_OPERATION_TIMEOUT"
            )
            reason = f"{reason} (set in {where})"
        return _refuse(server, reason)
    if progress:
        progress(ImportProgress(server.identifier, "walked", len(advertised)))
    if len(advertised) > MAX_TOOLS:
        return _refuse(
            server,
            f"the server advertises {len(advertised)} tools; at most {MAX_TOOLS} are imported "
            "and a catalogue is never truncated",
        )
    accepted, reasons = _validate(server.identifier, advertised)
    try:
        report = _reconcile(server, accepted, reasons, len(advertised))
    except IntegrityError:
        # Two different servers whose names collide (``a`` + ``b_c`` and ``a_b`` + ``c``)
        # imported at the same moment: the transaction rolled back whole, so nothing is
        # half-written, and the next import sees the winner's rows and skips with a reason.
        return _refuse(
            server,
            "another server's import claimed one of these tool names at the same moment; "
            "nothing was changed — run the import again",
        )
    if progress:
        progress(ImportProgress(server.identifier, "reconciled", report.imported))
    return report


def _validate(identifier: str, advertised: Sequence[dict[str, Any]]) -> tuple[list[_Accepted], list[str]]:
    reasons: list[str] = []
    candidates: list[_Accepted] = []
    local_tools = tools.local_tool_names()
    for position, tool in enumerate(advertised, start=1):
        remote = tool.get("name")
        if not isinstance(remote, str) or not remote:
            reasons.append(f"tool #{position} has no name")
            continue
        shown = repr(clean(remote))
        try:
            name = checked_local_name(identifier, remote)
            schema = normalise_schema(tool.get("inputSchema"))
        except (InvalidToolName, SchemaRefused) as exc:
            reasons.append(f"{shown}: {exc}")
            continue
        if name in local_tools:
            reasons.append(f"{shown}: local name {name} is taken by a locally registered tool")
            continue
        description = tool.get("description", "")
        if not isinstance(description, str):
            reasons.append(f"{shown}: description is not a string")
            continue
        annotations = tool.get("annotations")
        if not isinstance(annotations, dict):
            annotations = {}
        if contains_nul(annotations):
            reasons.append(f"{shown}: annotations contain a NUL character, which cannot be stored")
            continue
        candidates.append(_Accepted(name, remote, _prose(description[:MAX_DESCRIPTION]), schema, annotations))
    counts = Counter(candidate.tool_name for candidate in candidates)
    for name, count in sorted(counts.items()):
        if count > 1:
            # Keeping either would let a call reach a tool the operator did not pick.
            reasons.append(f"{count} remote tools map to the local name {name}; none of them is imported")
    return [c for c in candidates if counts[c.tool_name] == 1], reasons


def _prose(text: str) -> str:
    """``text`` without control or format characters, line breaks and tabs kept.

    Descriptions are prose a model and an operator read: an escape sequence or a bidi
    override only disguises it, and a NUL cannot be stored by PostgreSQL at all.
    """
    return "".join(char for char in text if char in "\n\t" or unicodedata.category(char) not in _INVISIBLE)


def _reconcile(
    server: McpServer, accepted: list[_Accepted], reasons: list[str], advertised: int
) -> ImportReport:
    now = timezone.now()
    with transaction.atomic():
        # The lock makes a second import of this server wait for the first to commit, so
        # it reads the rows the first wrote instead of inserting them again.
        locked = McpServer.objects.select_for_update().filter(pk=server.pk).first()
        if locked is None:
            return ImportReport(
                server.identifier, 0, 0, 0, (), refused="the server was deleted during the import"
            )
        if _catalogue_settings(locked) != _catalogue_settings(server):
            # The walk fetched what the row described when it started: tool names carry the
            # old identifier, the tools came from the old URL, or the data class that allowed
            # the import is gone. Writing them would attribute them to a server they are not from.
            return _refuse(
                server,
                "the server's identifier, URL or data class changed while its catalogue was "
                "fetched; nothing was changed — run the import again",
            )
        taken = dict(
            McpTool.objects.filter(tool_name__in=[a.tool_name for a in accepted])
            .exclude(server=locked)
            .values_list("tool_name", "server__identifier")
        )
        existing = {row.tool_name: row for row in McpTool.objects.filter(server=locked)}
        created: list[McpTool] = []
        changed: list[McpTool] = []
        imported = 0
        for tool in accepted:
            if tool.tool_name in taken:
                reasons.append(
                    f"{clean(tool.remote_name)!r}: local name {tool.tool_name} already belongs to "
                    f"server {taken[tool.tool_name]}"
                )
                continue
            imported += 1
            fresh = {
                "remote_name": tool.remote_name,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "remote_annotations": tool.annotations,
                "orphaned": False,
                "orphaned_at": None,
            }
            row = existing.pop(tool.tool_name, None)
            if row is None:
                # New tools start disabled: enabling is the operator's decision, tool by tool.
                created.append(McpTool(server=locked, tool_name=tool.tool_name, enabled=False, **fresh))
            elif _apply(row, fresh, now):
                changed.append(row)
        orphaned = 0
        for row in existing.values():
            orphaned += 1
            # orphaned_at keeps the moment the tool first vanished.
            if _apply(row, {"orphaned": True, "orphaned_at": row.orphaned_at or now}, now):
                changed.append(row)
        McpTool.objects.bulk_create(created)
        if changed:
            McpTool.objects.bulk_update(changed, [*_SYNCED_FIELDS, "updated"])
        # Every advertised tool is imported or skipped; one reason may cover several (duplicates).
        report = ImportReport(locked.identifier, imported, advertised - imported, orphaned, tuple(reasons))
        status = ImportStatus.PARTIAL if reasons else ImportStatus.OK
        fields = {
            "import_status": status,
            "import_error": "\n".join(reasons),
            "tool_count": imported,
            "last_imported": now,
        }
        McpServer.objects.filter(pk=locked.pk).update(**fields)
    _copy(server, fields)
    return report


def _catalogue_settings(server: McpServer) -> tuple[str, str, bool]:
    """What decides which tools an import fetches and what they are called."""
    return server.identifier, server.url, bool(server.data_class)


def _apply(row: McpTool, values: dict[str, Any], now: datetime) -> bool:
    """Set ``values`` on ``row``; True when anything changed (an unchanged row is not written)."""
    if all(getattr(row, key) == value for key, value in values.items()):
        return False
    for key, value in values.items():
        setattr(row, key, value)
    row.updated = now
    return True


def _refuse(server: McpServer, reason: str) -> ImportReport:
    fields = {"import_status": ImportStatus.ERROR, "import_error": reason}
    # update() rather than save(): the catalogue and every operator-edited column stay as they were.
    McpServer.objects.filter(pk=server.pk).update(**fields)
    _copy(server, fields)
    return ImportReport(server.identifier, 0, 0, 0, (), refused=reason)


def _copy(server: McpServer, fields: dict[str, Any]) -> None:
    # Keep the caller's instance truthful without a reload.
    for key, value in fields.items():
        setattr(server, key, value)
