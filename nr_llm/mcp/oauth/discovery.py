"""Find the authorization server of an MCP server, in the specification's order.

1. Protected resource metadata (RFC 9728): the challenge's ``resource_metadata`` URL,
   then ``/.well-known/oauth-protected-resource`` + the MCP path, then the root one. Its
   ``resource`` must cover the MCP URL, or the flow stops before anything is asked of
   an authorization server (a metadata document for someone else's resource would get
   us a token the wrong audience accepts).
2. Authorization server metadata (RFC 8414 path insertion, then the OpenID variants),
   whose ``issuer`` must be exactly the issuer it was looked up for (§3.3): a document
   that names another issuer is refused, never followed.
3. A 2025-03-26 server has no protected resource metadata: the authorization server is
   the MCP origin, its metadata at the origin, else ``/authorize``, ``/token`` and
   ``/register`` there.

An issuer known beforehand (pinned by an earlier grant, or configured for a pre-registered
client) must be exactly the one found, or discovery fails before any secret is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..wire.errors import AuthorizationError, McpTransportError
from .challenge import Challenge, parse_challenge
from .legs import Answer, OAuthLegs


@dataclass(frozen=True)
class ProtectedResource:
    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None


@dataclass(frozen=True)
class AuthorizationServer:
    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    # RFC 8414 §2: absent means client_secret_basic only.
    token_endpoint_auth_methods: tuple[str, ...] = ("client_secret_basic",)
    code_challenge_methods: tuple[str, ...] = ()
    grant_types: tuple[str, ...] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    revocation_endpoint: str | None = None
    # RFC 9449 §5.1; None: not advertised.
    dpop_algorithms: tuple[str, ...] | None = None
    # False for the 2025-03-26 defaults, when no metadata document was found at all.
    from_metadata: bool = True


@dataclass(frozen=True)
class Discovered:
    """Where to authorize, and the resource indicator (RFC 8707) to name in every request."""

    server: AuthorizationServer
    resource: str
    protected: ProtectedResource | None
    # Where the protected resource metadata was found: kept with the grant for its renewal.
    metadata_url: str | None = None


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), "", "", ""))


def canonical_resource(url: str) -> str:
    """The MCP URL as a resource indicator: lower-case scheme and host, no fragment (RFC 8707 §2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def covers(resource: str, mcp_url: str) -> bool:
    """True when ``resource`` names the MCP URL or a path above it on the same origin."""
    try:
        wanted, given = urlsplit(mcp_url), urlsplit(resource)
        same_origin = (given.scheme.lower(), given.hostname, given.port or _default(given.scheme)) == (
            wanted.scheme.lower(),
            wanted.hostname,
            wanted.port or _default(wanted.scheme),
        )
    except ValueError:
        return False
    if not same_origin or given.fragment or given.query:
        return False
    above = given.path.rstrip("/")
    path = wanted.path.rstrip("/")
    return path == above or path.startswith(above + "/")


def _default(scheme: str) -> int:
    return 443 if scheme.lower() == "https" else 80


def discover(
    legs: OAuthLegs,
    mcp_url: str,
    resource_metadata: str | None,
    *,
    pinned_issuer: str | None = None,
    configured_issuer: str | None = None,
) -> Discovered:
    """The authorization server to use for ``mcp_url``; every fetched URL is vetted by ``legs``.

    With ``pinned_issuer`` (a server authorized before), a resource that no longer lists
    that issuer is ``authorization_required``/``server_changed``: a different authorization
    server means a person decides, not a silent re-registration. With ``configured_issuer``
    (a pre-registered client's), one that does not list it is ``issuer_mismatch``.
    """
    if pinned_issuer and configured_issuer and not same_issuer(pinned_issuer, configured_issuer):
        raise server_changed(
            legs.server, "its configured authorization server is not the one it was authorized by"
        )
    required = configured_issuer or pinned_issuer
    # A grant's pin moving is "server changed" (reconnect); a first authorization that does
    # not find the configured issuer is a configuration to check.
    configured = configured_issuer if pinned_issuer is None else None
    found = _protected_resource(legs, mcp_url, resource_metadata)
    if found is None:
        issuer = origin_of(mcp_url)
        if required is not None and not same_issuer(required, issuer):
            raise _issuer_not_listed(legs.server, configured)
        metadata = server_metadata(legs, issuer) or _legacy_defaults(issuer)
        return Discovered(metadata, canonical_resource(mcp_url), None)
    protected, metadata_url = found
    if not covers(protected.resource, mcp_url):
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: its protected resource metadata names another resource than "
            "the configured URL; nothing was asked of an authorization server.",
            reason="resource_mismatch",
        )
    if required is not None:
        if not any(same_issuer(required, candidate) for candidate in protected.authorization_servers):
            raise _issuer_not_listed(legs.server, configured)
        issuer = required
    else:
        issuer = protected.authorization_servers[0]
    server = server_metadata(legs, issuer)
    if server is None:
        raise _failed(legs.server, "its authorization server publishes no metadata", "discovery")
    return Discovered(server, protected.resource, protected, metadata_url)


def confirm_issuer(legs: OAuthLegs, mcp_url: str, resource_metadata: str, pinned_issuer: str) -> None:
    """Raise ``server_changed`` when the resource's current metadata no longer lists the pinned issuer.

    Asked on a 401 naming ``resource_metadata``, before a refresh token is spent: a moved
    resource is an operator's decision, and a refresh at the old server cannot fix it.
    """
    found = _protected_resource(legs, mcp_url, resource_metadata)
    if found is None or not covers(found[0].resource, mcp_url):
        return  # nothing trustworthy says it moved; the refresh at the pinned issuer decides
    if not any(same_issuer(pinned_issuer, candidate) for candidate in found[0].authorization_servers):
        raise _issuer_not_listed(legs.server, None)


def probe_challenge(legs: OAuthLegs, mcp_url: str) -> Challenge | None:
    """The MCP server's challenge to an unauthenticated ``initialize``, for an operator's Connect
    (its scopes and metadata URL start the flow as the specification says); None when the
    server answers without asking for authorization."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "nr-llm"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        answer = legs.post_json(mcp_url, "MCP endpoint", message, accept)
    except McpTransportError as exc:
        if exc.kind in ("content_type", "malformed"):
            return None  # it answered (an event stream, say): no authorization asked for
        raise
    if answer.status not in (401, 403):
        return None
    return parse_challenge(answer.headers.get("WWW-Authenticate"))


def same_issuer(a: str, b: str) -> bool:
    """Simple string comparison (RFC 8414 §3.3), except that a root issuer with and without its
    trailing slash are one issuer (``https://as.example`` and ``https://as.example/``)."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return long == short + "/" and urlsplit(short).path == ""


def _protected_resource(
    legs: OAuthLegs, mcp_url: str, header_url: str | None
) -> tuple[ProtectedResource, str] | None:
    parts = urlsplit(mcp_url)
    origin = origin_of(mcp_url)
    candidates = [header_url] if header_url else []
    path = parts.path.rstrip("/")
    if path:
        candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    candidates.append(f"{origin}/.well-known/oauth-protected-resource")
    for url in dict.fromkeys(candidates):
        answer = legs.get(url, "protected resource metadata")
        if _found(answer):
            return _parse_protected(legs.server, answer.body or {}), url
    return None


def server_metadata(legs: OAuthLegs, issuer: str) -> AuthorizationServer | None:
    """The metadata of exactly ``issuer`` (its document must name it), None where none is published."""
    parts = urlsplit(issuer)
    if parts.query or parts.fragment:
        raise _failed(legs.server, "its authorization server's issuer is not a plain URL", "discovery")
    origin = origin_of(issuer)
    path = parts.path.rstrip("/")
    if path:
        candidates = [
            f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration",
        ]
    else:
        candidates = [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    for url in candidates:
        answer = legs.get(url, "authorization server metadata")
        if _found(answer):
            return _parse_server(legs.server, answer.body or {}, issuer)
    return None


def _found(answer: Answer) -> bool:
    # Not there (404, 405, an error page): try the next place. A 2xx that is not a JSON
    # object has already failed in the leg; a document for someone else fails in parsing.
    return 200 <= answer.status < 300 and answer.body is not None


def _parse_protected(server: str, body: dict[str, Any]) -> ProtectedResource:
    resource = body.get("resource")
    servers = body.get("authorization_servers")
    if not isinstance(resource, str) or not resource:
        raise _failed(server, "its protected resource metadata names no resource", "discovery")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) and s for s in servers):
        raise _failed(server, "its protected resource metadata names no authorization server", "discovery")
    return ProtectedResource(resource, tuple(servers), _strings(body.get("scopes_supported")))


def _parse_server(server: str, body: dict[str, Any], issuer: str) -> AuthorizationServer:
    named = body.get("issuer")
    if not isinstance(named, str) or not same_issuer(named, issuer):
        raise AuthorizationError(
            "authorization_failed",
            server,
            f"MCP server {server!r}: its authorization server's metadata names another issuer than "
            "the one it was looked up for; it is not used.",
            reason="issuer_mismatch",
        )
    token_endpoint = body.get("token_endpoint")
    if not isinstance(token_endpoint, str) or not token_endpoint:
        raise _failed(server, "its authorization server's metadata has no token endpoint", "discovery")
    methods = _strings(body.get("token_endpoint_auth_methods_supported"))
    return AuthorizationServer(
        issuer=issuer,
        token_endpoint=token_endpoint,
        authorization_endpoint=nonempty(body.get("authorization_endpoint")),
        registration_endpoint=nonempty(body.get("registration_endpoint")),
        scopes_supported=_strings(body.get("scopes_supported")),
        token_endpoint_auth_methods=methods if methods is not None else ("client_secret_basic",),
        code_challenge_methods=_strings(body.get("code_challenge_methods_supported")) or (),
        grant_types=_strings(body.get("grant_types_supported")),
        iss_parameter_supported=body.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=body.get("client_id_metadata_document_supported") is True,
        revocation_endpoint=nonempty(body.get("revocation_endpoint")),
        dpop_algorithms=_strings(body.get("dpop_signing_alg_values_supported")),
    )


def _legacy_defaults(issuer: str) -> AuthorizationServer:
    # 2025-03-26, "Fallbacks for Servers without Metadata Discovery".
    return AuthorizationServer(
        issuer=issuer,
        token_endpoint=f"{issuer}/token",
        authorization_endpoint=f"{issuer}/authorize",
        registration_endpoint=f"{issuer}/register",
        token_endpoint_auth_methods=("client_secret_basic", "client_secret_post", "none"),
        code_challenge_methods=("S256",),
        from_metadata=False,
    )


def nonempty(value: object) -> str | None:
    """A non-empty string from a JSON answer, else None."""
    return value if isinstance(value, str) and value else None


def _strings(value: object) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str) and item)


def _failed(server: str, what: str, reason: Any) -> AuthorizationError:
    return AuthorizationError(
        "authorization_failed", server, f"MCP server {server!r}: {what}.", reason=reason
    )


def server_changed(server: str, what: str) -> AuthorizationError:
    """``authorization_required``/``server_changed``: what the grant is pinned to moved (``what``)."""
    return AuthorizationError(
        "authorization_required",
        server,
        f"MCP server {server!r}: {what}; an operator must reconnect it (nothing was sent to the new one).",
        reason="server_changed",
    )


def _issuer_not_listed(server: str, configured: str | None) -> AuthorizationError:
    if configured is None:
        return server_changed(
            server, "it now names a different authorization server than the one it was authorized with"
        )
    return AuthorizationError(
        "authorization_failed",
        server,
        f"MCP server {server!r}: its metadata does not name the authorization server (issuer) configured "
        "for its pre-registered client; nothing was sent to any authorization server. Check the issuer "
        "on the server's page.",
        reason="issuer_mismatch",
    )
