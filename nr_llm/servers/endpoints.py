"""Turn a configured server into what the protocol client needs, and build the client.

The one place where Django rows meet ``nr_llm.mcp``: it resolves the credential and the
budget per operation, so a changed setting or a rotated secret applies to the next call.
"""

from __future__ import annotations

from typing import cast

from ..conf import conf
from ..governance import ceiling as ceilings
from ..mcp import AuthPlacement, Endpoint, McpClient
from ..models import McpServer
from .caches import shared_caches
from .credentials import CredentialUnavailable
from .health import HealthRecorder


def endpoint_for(server: McpServer, *, user_id: int | None = None) -> Endpoint:
    """``user_id``: whose grant, on a per-user server (resolve it with
    ``nr_llm.authorization.actors.resolve``, which also says when there is none)."""
    if server.uses_oauth:
        return _oauth_endpoint(server, user_id)
    credential: str | None = None
    problem = ""
    try:
        credential = server.resolve_credential()
    except CredentialUnavailable as exc:
        problem = str(exc)
    if server.auth_placement != "none" and credential is None and not problem:
        problem = "no credential is configured"
    return Endpoint(
        identifier=server.identifier,
        url=server.url,
        budget_seconds=server.budget_seconds,
        credential=credential,
        auth_placement=cast(AuthPlacement, server.auth_placement),
        auth_header_name=server.auth_header_name,
        credential_problem=problem,
        capture_content=_captures_content(server),
    )


def _captures_content(server: McpServer) -> bool:
    """The site's content capture (``NR_LLM_OTEL_CAPTURE_CONTENT``) reaches this server's data
    class: its error text may then be a span's status description."""
    allowed = conf.OTEL_CAPTURE_CONTENT
    return bool(allowed) and ceilings.allows(allowed, server.data_class)


#: A stand-in for the client, set by ``tools.using_client`` (a site's tests): process-wide, not
#: per context, so the calls a turn runs on the pool's threads reach it too.
_stand_in: list[object] = []


def mcp_client() -> McpClient:
    """A client wired to this installation: private-network policy, trust, health recording and
    the caches processes share (``NR_LLM_CACHE``); inside ``tools.using_client(fake)``, the fake."""
    if _stand_in:
        return cast(McpClient, _stand_in[-1])
    shared = shared_caches()
    return McpClient(
        connection=conf.MCP_CONNECTION,
        health=HealthRecorder(),
        era_cache=None if shared is None else shared[0],
        era_cache_seconds=conf.MCP_ERA_CACHE_SECONDS,
        result_limits=conf.TOOL_RESULT_LIMITS,
        tools_cache=None if shared is None else shared[1],
    )


def _oauth_endpoint(server: McpServer, user_id: int | None) -> Endpoint:
    """The bearer token comes from the stored grant (``Endpoint.oauth``), renewed as needed."""
    # Imported here: the authorization package's store imports the models this module's
    # callers are still loading.
    from ..authorization.service import oauth_settings

    if server.per_user and user_id is None:
        # Fail closed: a per-user server acts as its actor or not at all, never through a
        # shared grant (one may be left over from before the operator changed the mode).
        return Endpoint(
            identifier=server.identifier,
            url=server.url,
            budget_seconds=server.budget_seconds,
            auth_placement="bearer",
            credential_problem="it is a per-user server and this operation names no user",
        )
    try:
        settings = oauth_settings(server, None if not server.per_user else user_id)
    except CredentialUnavailable as exc:
        # Fail closed: a bearer placement with no credential is refused before any request.
        return Endpoint(
            identifier=server.identifier,
            url=server.url,
            budget_seconds=server.budget_seconds,
            auth_placement="bearer",
            credential_problem=f"its OAuth client secret or key cannot be read ({exc})",
        )
    return Endpoint(
        identifier=server.identifier,
        url=server.url,
        budget_seconds=server.budget_seconds,
        auth_placement="none",
        oauth=settings,
        capture_content=_captures_content(server),
    )
