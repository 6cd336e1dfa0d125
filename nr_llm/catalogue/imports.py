"""Import a server's tool catalogue: walk it, validate every tool, reconcile the rows.

The walk is network I/O and happens outside any transaction; only the reconcile holds
the server row locked, so a slow server never holds a database lock, yet two imports of
one server still serialize where it matters. A refusal changes nothing but the server's
import status and reason.

Definitions are pinned (pins.py): an enabled tool whose definition changes is disabled in the
same transaction that stores the new text, until an operator reviews it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import tools
from ..authorization import runtime as authorization
from ..mcp import (
    MAX_ENCODED_BYTES,
    Endpoint,
    InvalidToolName,
    McpTransportError,
    SchemaRefused,
    checked_local_name,
    clean,
    contains_nul,
    normalise_schema,
    redact,
)
from ..models import DEFINITION_CHANGED, ImportStatus, McpServer, McpTool, tool_definition
from ..servers.endpoints import mcp_client
from . import features, identity, pins
from .pins import PARTS, fingerprint

MAX_TOOLS = 500
#: A remote description is text a model reads on every request; more than this is not a description.
MAX_DESCRIPTION = 4000
#: A title is a display name (MCP 2025-06-18): one line.
MAX_TITLE = 200
#: A part of a raw definition larger than this is kept as its digest (it is compared, not read).
MAX_RAW_PART_BYTES = 32 * 1024
#: Unicode categories removed from a description: controls, format (bidi) and surrogates.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})

_SYNCED_FIELDS = (
    "remote_name",
    "title",
    "description",
    "input_schema",
    "output_schema",
    "remote_annotations",
    "orphaned",
    "orphaned_at",
    "definition_fingerprint",
    "raw_definition",
    "pinned_definition",
    "pinned_fingerprint",
    "pinned_raw",
    "task_support",
)
#: Written only for the rows an import disables, so an operator's concurrent switch is never undone.
_DISABLING_FIELDS = ("enabled", "disabled_reason", "disabled_at")


@dataclass(frozen=True)
class ChangedDefinition:
    """An enabled tool this import disabled: which parts of its definition changed."""

    tool_name: str
    parts: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.tool_name} ({', '.join(PARTS.get(part, part) for part in self.parts)})"


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
    #: Enabled tools whose definition changed: disabled until an operator reviews them.
    changed: tuple[ChangedDefinition, ...] = ()
    #: What the import did with the server's resources, templates and prompts
    #: (``features.FeatureReport.as_json``); empty when the client lists tools only.
    features: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.refused

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ImportReport:
        """The report back from ``dataclasses.asdict`` through JSON (a task result)."""
        changed = tuple(
            ChangedDefinition(c["tool_name"], tuple(c["parts"])) for c in value.get("changed", ())
        )
        return cls(**{**value, "skip_reasons": tuple(value["skip_reasons"]), "changed": changed})

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
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: dict[str, Any]
    #: The definition as the server sent it (``raw_definition``).
    raw: dict[str, Any]
    #: ``execution.taskSupport`` as listed: outside ``raw``, so outside the pin (models.McpTool).
    task_support: str = ""


def raw_definition(tool: dict[str, Any]) -> dict[str, Any]:
    """``tool``'s definition as the server sent it, each part kept as sent or as its digest."""
    return tool_definition(
        *(
            _kept_raw(tool.get(part, default))
            for part, default in (
                ("title", ""),
                ("description", ""),
                ("inputSchema", None),
                ("outputSchema", {}),
                ("annotations", {}),
            )
        )
    )


TASK_SUPPORT = frozenset({"forbidden", "optional", "required"})


def task_support(tool: dict[str, Any]) -> str:
    """The tool's listed ``execution.taskSupport``; "" when absent or not one MCP defines."""
    execution = tool.get("execution")
    value = execution.get("taskSupport") if isinstance(execution, dict) else None
    return value if isinstance(value, str) and value in TASK_SUPPORT else ""


def _kept_raw(value: Any) -> Any:
    """``value`` when it can be stored and is small; else its SHA-256 and size, which still compare."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    try:
        json.dumps(value, allow_nan=False)
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    except (ValueError, UnicodeEncodeError):
        size = MAX_RAW_PART_BYTES + 1  # NaN or an unpaired surrogate: JSON columns refuse both
    if size <= MAX_RAW_PART_BYTES and not contains_nul(value):
        return value
    return {"not kept": "too large or not storable", "sha256": hashlib.sha256(text.encode()).hexdigest()}


def import_catalogue(
    server: McpServer,
    client: CatalogueClient | None = None,
    progress: Progress | None = None,
    *,
    fresh: bool = True,
) -> ImportReport:
    """Import ``server``'s catalogue; the report says what happened, a refusal included.

    ``fresh=False`` (the periodic re-import) takes a ``tools/list`` answer another process
    fetched while its server's ``ttlMs`` still allows it; an operator's import always asks."""
    if not server.data_class:
        return _refuse(server, "no data class is declared; declare what data this server may see first")
    if not server.url:
        return _refuse(server, "no URL is configured")
    on_page = None
    if progress:
        progress(ImportProgress(server.identifier, "walking"))

        def on_page(pages: int, count: int) -> None:
            progress(ImportProgress(server.identifier, "page", count, pages))

    try:
        chosen = identity.import_identity(server)
    except identity.NoImportGrant as exc:
        return _refuse(server, str(exc))
    endpoint = chosen.endpoint
    try:
        if client is None:
            advertised = mcp_client().list_tools(endpoint, on_page=on_page, fresh=fresh)
        else:
            # A given client (a site's test double) is asked as CatalogueClient says: no cache.
            advertised = client.list_tools(endpoint, on_page=on_page)
    except McpTransportError as exc:
        authorization.observe(server, exc, chosen.user_id)
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
    # Beside the tools, in an operation of its own: a server without resources or prompts, or
    # a test double that lists tools only, leaves the tools' import as it is.
    walker = client or mcp_client()
    if isinstance(walker, features.FeaturesClient):
        report = dataclasses.replace(report, features=features.import_features(server, walker).as_json())
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
        title = tool.get("title", "")
        if not isinstance(title, str):
            reasons.append(f"{shown}: title is not a string")
            continue
        annotations = tool.get("annotations")
        if not isinstance(annotations, dict):
            annotations = {}
        if contains_nul(annotations):
            reasons.append(f"{shown}: annotations contain a NUL character, which cannot be stored")
            continue
        output_schema = tool.get("outputSchema", {})
        if problem := _output_schema_problem(output_schema):
            reasons.append(f"{shown}: {problem}")
            continue
        candidates.append(
            _Accepted(
                name,
                remote,
                clean(title, MAX_TITLE),
                _prose(description[:MAX_DESCRIPTION]),
                schema,
                output_schema,
                annotations,
                raw_definition(tool),
                task_support(tool),
            )
        )
    counts = Counter(candidate.tool_name for candidate in candidates)
    for name, count in sorted(counts.items()):
        if count > 1:
            # Keeping either would let a call reach a tool the operator did not pick.
            reasons.append(f"{count} remote tools map to the local name {name}; none of them is imported")
    return [c for c in candidates if counts[c.tool_name] == 1], reasons


def _output_schema_problem(schema: Any) -> str:
    """Why an advertised output schema cannot be kept, or "" (it is stored for the operator, as sent)."""
    if not isinstance(schema, dict):
        return "output schema is not an object"
    if contains_nul(schema):
        return "output schema contains a NUL character, which cannot be stored"
    encoded = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())
    if encoded > MAX_ENCODED_BYTES:
        return f"output schema is {encoded} bytes encoded; at most {MAX_ENCODED_BYTES} (16 KiB) are kept"
    return ""


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
        disabled: list[McpTool] = []
        reviews: list[ChangedDefinition] = []
        imported = 0
        for tool in accepted:
            if tool.tool_name in taken:
                reasons.append(
                    f"{clean(tool.remote_name)!r}: local name {tool.tool_name} already belongs to "
                    f"server {taken[tool.tool_name]}"
                )
                continue
            imported += 1
            fresh: dict[str, Any] = {
                "remote_name": tool.remote_name,
                "title": tool.title,
                "description": tool.description,
                "input_schema": tool.input_schema,
                "output_schema": tool.output_schema,
                "remote_annotations": tool.annotations,
                "orphaned": False,
                "orphaned_at": None,
                "raw_definition": tool.raw,
                "definition_fingerprint": fingerprint(tool.raw),
                "task_support": tool.task_support,
            }
            row = existing.pop(tool.tool_name, None)
            if row is None:
                # New tools start disabled: enabling is the operator's decision, tool by tool.
                pin = {
                    "pinned_definition": tool.raw,
                    "pinned_fingerprint": fresh["definition_fingerprint"],
                    "pinned_raw": True,
                }
                created.append(
                    McpTool(server=locked, tool_name=tool.tool_name, enabled=False, **fresh, **pin)
                )
                continue
            parts = pins.decide(row, tool, fresh)
            if parts:
                reviews.append(ChangedDefinition(row.tool_name, parts))
                fresh.update(enabled=False, disabled_reason=DEFINITION_CHANGED, disabled_at=now)
                _apply(row, fresh, now)
                disabled.append(row)
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
        if disabled:
            McpTool.objects.bulk_update(disabled, [*_SYNCED_FIELDS, *_DISABLING_FIELDS, "updated"])
        # Every advertised tool is imported or skipped; one reason may cover several (duplicates).
        report = ImportReport(
            locked.identifier,
            imported,
            advertised - imported,
            orphaned,
            tuple(reasons),
            changed=tuple(reviews),
        )
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
