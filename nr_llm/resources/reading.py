"""The site's resource API: what it may read, and reading it under the server's gate.

A read is allowed for a URI its server lists as an enabled resource, a URI an enabled template
describes (template_matches: nothing built from a model's input climbs out of it), or a link a
tool of that server returned (``remember_links``). The server's data class is judged against
the caller's ceiling before any contact; a refused read, like every read, leaves a ledger row.
Nothing is raised for what a server or a caller's input does: the result says it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from django.core.cache import cache

from ..authorization import actors
from ..authorization import runtime as authorization
from ..governance import ceiling
from ..mcp import NAME_LIMIT, Block, CallOutcome, Endpoint, McpTransportError, clean, redact, template_matches
from ..models import FeatureKind, McpFeature, McpServer
from ..servers.endpoints import mcp_client
from . import record

#: ``needs_authorization``: a per-user server and an actor with no usable grant; not sent, the
#: actor connects at ``connect_url`` first.
ReadStatus = Literal["succeeded", "failed", "refused", "not_found", "needs_authorization"]
#: How long a link a tool returned stays readable (seconds).
LINK_SECONDS = 3_600
_LINK_PREFIX = "nr_llm:resource-link:"


class ResourceReader(Protocol):
    def read_resource(self, endpoint: Endpoint, uri: str) -> CallOutcome: ...


@dataclass(frozen=True)
class Resource:
    """An enabled resource (``uri``) or resource template (``uri_template``) of ``server``."""

    server: str
    name: str
    uri: str = ""
    uri_template: str = ""
    title: str = ""
    description: str = ""
    mime_type: str = ""


@dataclass(frozen=True)
class ResourceResult:
    """As ``ToolResult``: ``text`` for a text reader, ``content`` the server's blocks (embedded
    resources, cleaned and capped), ``status`` what a caller branches on."""

    text: str
    is_error: bool
    server: str
    uri: str
    status: ReadStatus = "succeeded"
    content: tuple[Block, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: Where the actor connects their account (status ``needs_authorization``), else "".
    connect_url: str = ""


def offered(data_class_ceiling: str | None, kinds: Iterable[str]) -> list[McpFeature]:
    """The enabled, present, unchanged rows of enabled servers within the ceiling."""
    within = ceiling.within(ceiling.resolve(data_class_ceiling))
    rows = (
        McpFeature.objects.filter(
            kind__in=list(kinds),
            enabled=True,
            orphaned=False,
            server__enabled=True,
            server__data_class__in=within,
        )
        .select_related("server")
        .order_by("server__identifier", "kind", "key")
    )
    return [row for row in rows if row.offered]


def available(data_class_ceiling: str | None = None) -> list[Resource]:
    return [
        Resource(
            server=row.server.identifier,
            name=row.name,
            uri=row.key if row.kind == FeatureKind.RESOURCE else "",
            uri_template=row.key if row.kind == FeatureKind.TEMPLATE else "",
            title=row.title,
            description=row.description,
            mime_type=row.mime_type,
        )
        for row in offered(data_class_ceiling, (FeatureKind.RESOURCE, FeatureKind.TEMPLATE))
    ]


def remember_links(server: str, content: Iterable[Block]) -> int:
    """Make the resource links of a tool's answer readable from ``server`` (for LINK_SECONDS).
    ``tools.execute`` calls this with each result it returns; a site may too."""
    kept = 0
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type") == "resource_link"
            and isinstance(block.get("uri"), str)
        ):
            cache.set(_link_key(server, block["uri"]), True, LINK_SECONDS)
            kept += 1
    return kept


def _link_key(server: str, uri: str) -> str:
    return _LINK_PREFIX + hashlib.sha256(f"{server}\x00{uri}".encode("utf-8", "replace")).hexdigest()


#: The ledger row's name for a read refused before its URI matched anything the server offered.
REFUSED_NAME = "(refused)"


def _why_not(server: McpServer | None, server_name: str, uri: str, ceiling_value: str) -> tuple[str, str]:
    """Why ``uri`` may not be read from ``server`` ("" when it may), and what the ledger row is
    named by: the enabled resource's URI, the template that describes it, or the link a tool
    returned. Never a URI a caller built (a model's input): that stays in the encrypted
    arguments only, as a tool call's arguments do."""
    if server is None or not server.enabled:
        return f"no enabled MCP server {clean(server_name, NAME_LIMIT)!r}", REFUSED_NAME
    if not ceiling.allows(ceiling_value, server.data_class):
        return (
            f"MCP server {server.identifier!r} is declared {ceiling.label(server.data_class)}, above this "
            f"caller's ceiling ({ceiling.label(ceiling_value)}); it was not contacted"
        ), REFUSED_NAME
    rows = [row for row in server.features.filter(enabled=True, orphaned=False) if row.offered]
    if any(row.kind == FeatureKind.RESOURCE and row.key == uri for row in rows):
        return "", uri
    for row in rows:
        if row.kind == FeatureKind.TEMPLATE and template_matches(row.key, uri):
            return "", row.key
    if cache.get(_link_key(server.identifier, uri)):
        return "", uri
    return (
        f"{clean(uri, NAME_LIMIT)!r} is neither an enabled resource of MCP server {server.identifier!r}, "
        "nor described by one of its enabled templates, nor a link one of its tools returned"
    ), REFUSED_NAME


def read(
    uri: str,
    *,
    server: str,
    actor: object = None,
    data_class_ceiling: str | None = None,
    client: ResourceReader | None = None,
) -> ResourceResult:
    applied = ceiling.resolve(data_class_ceiling)
    row = McpServer.objects.filter(identifier=server).first()
    why, named = (
        _why_not(row, server, uri, applied)
        if isinstance(uri, str)
        else ("the URI is not a string", REFUSED_NAME)
    )
    uri = uri if isinstance(uri, str) else ""
    if why:
        record.refused("resources/read", server, named, {"uri": uri}, actor, applied, why, row)
        return ResourceResult(text=why, is_error=True, server=server, uri=uri, status="refused")
    assert row is not None
    access = actors.resolve(row, actor)
    if isinstance(access, actors.NeedsAuthorization):
        text = needs_text(access, f"the resource {clean(uri, NAME_LIMIT)!r} was not read")
        record.refused(
            "resources/read",
            server,
            named[:150],
            {"uri": uri},
            actor,
            applied,
            text,
            row,
            error_kind="needs_authorization",
        )
        return ResourceResult(
            text, True, server, uri, status="needs_authorization", connect_url=access.connect_url
        )
    endpoint = access
    call_id = record.started("resources/read", server, named[:150], {"uri": uri}, actor, applied, row)
    if isinstance(call_id, str):
        # No row, no request: a read nobody can find in the ledger is not sent (as a tool call).
        return ResourceResult(text=call_id, is_error=True, server=server, uri=uri, status="failed")
    started = time.monotonic()
    try:
        outcome = (client or mcp_client()).read_resource(endpoint, uri)
    except McpTransportError as exc:
        # A grant the server or its issuer refused needs its user (or operator), as for a tool.
        authorization.observe(row, exc, user_id=actors.actor_id(actor))
        text = redact(str(exc), endpoint.credential)
        status: ReadStatus = "not_found" if exc.kind == "resource_not_found" else "failed"
        record.finished(
            call_id, is_error=True, error_kind=exc.kind, duration_ms=_ms(started), era="", note=text
        )
        return ResourceResult(text=text, is_error=True, server=server, uri=uri, status=status)
    record.finished(
        call_id,
        is_error=False,
        error_kind="",
        duration_ms=_ms(started),
        era=outcome.era,
        note=f"{len(outcome.content)} content block(s)",
    )
    return ResourceResult(
        text=outcome.text,
        is_error=False,
        server=server,
        uri=uri,
        content=outcome.content,
        notes=outcome.notes,
    )


def needs_text(access: actors.NeedsAuthorization, what: str) -> str:
    """What a caller (or a model) reads when the actor must connect their account first."""
    return (
        f"{what}: MCP server {access.server!r} acts as the signed-in user and this caller has no "
        f"usable grant ({access.reason.replace('_', ' ')}); the user must connect their account at "
        f"{access.connect_url} first, so do not retry it now"
    )


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
