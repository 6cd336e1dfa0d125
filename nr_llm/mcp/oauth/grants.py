"""The grants: authorization code with PKCE (in two steps), client credentials, refresh.

The authorization code grant is split because its middle belongs to a person: ``start``
discovers, registers and returns the URL to send a browser to together with what must be
kept until the callback (never shown to anyone: it holds the PKCE verifier); ``finish``
checks ``state`` and the RFC 9207 ``iss`` and exchanges the code. A tool call never
waits for a browser.

Every token request names the resource (RFC 8707), identically on the authorization and
token requests, and goes to the token endpoint pinned for the grant, with the client
authentication of the client registered at that issuer only. A renewal whose authorization
server now names another token endpoint is ``server_changed``: nothing is sent. Revocation
goes to the pinned issuer only, found in metadata that names exactly that issuer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any
from urllib.parse import urlencode, urlsplit

from ..wire.errors import AuthorizationError
from ..wire.text import clean
from .discovery import Discovered, discover, nonempty, server_changed, server_metadata
from .dpop import NONCE_ERROR, DpopKey, server_nonce, supports_es256, usable_key
from .federation import identity_assertion, workload_assertion
from .identity import JWT_BEARER, ClientConfig, WallClock, authenticate, client_for, not_configured
from .legs import Answer, OAuthLegs, vet_url
from .scopes import select_scopes, union_scopes
from .sealed import Sealed, sealed
from .store import ClientRegistration, Grant, GrantStore


@dataclass(frozen=True)
class PendingAuthorization:
    """What must be kept, server-side and secret, between ``start`` and ``finish``."""

    state: str = field(repr=False)
    code_verifier: str = field(repr=False)
    redirect_uri: str
    resource: str
    scopes: tuple[str, ...]
    issuer: str
    token_endpoint: str
    client: ClientRegistration
    iss_parameter_supported: bool = False
    # What the grant is bound to (empty in a pending authorization kept before they were).
    mcp_url: str = ""
    resource_metadata: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for a store to keep (it holds secrets: encrypt it there)."""
        data = asdict(self)
        data["scopes"] = list(self.scopes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingAuthorization:
        values = dict(data)
        values["scopes"] = tuple(values.get("scopes") or ())
        values["client"] = ClientRegistration(**values["client"])
        return cls(**values)


@dataclass(frozen=True)
class AuthorizationStart:
    # The browser's destination; it carries state and the PKCE challenge, so not in repr.
    url: str = field(repr=False)
    pending: PendingAuthorization


def start_authorization(
    legs: OAuthLegs,
    mcp_url: str,
    config: ClientConfig,
    store: GrantStore,
    wall: WallClock,
    *,
    resource_metadata: str | None = None,
    challenged_scopes: tuple[str, ...] | None = None,
    previous_scopes: tuple[str, ...] = (),
) -> AuthorizationStart:
    """Discover, register if needed, and build the authorization request (PKCE S256, state, resource)."""
    if not config.redirect_uri:
        raise _unsupported(legs.server, "no redirect URI is configured for the authorization code grant")
    found = _discover(legs, mcp_url, config, resource_metadata, None)
    server = found.server
    if not server.authorization_endpoint:
        raise _unsupported(legs.server, "its authorization server has no authorization endpoint")
    if server.from_metadata and "S256" not in server.code_challenge_methods:
        # The specification: without advertised S256 support, the client must not proceed.
        raise _unsupported(legs.server, "its authorization server does not advertise PKCE with S256")
    endpoint = vet_url(
        server.authorization_endpoint,
        legs.server,
        "authorization endpoint",
        allow_private_networks=legs.allow_private_networks,
    )
    scopes = _scopes(config, found, challenged_scopes, previous_scopes, wants_refresh=True)
    client = client_for(legs, config, server, store, scopes, wall)
    verifier = secrets.token_urlsafe(64)  # 86 characters of RFC 7636's unreserved set
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": config.redirect_uri,
        "code_challenge": _s256(verifier),
        "code_challenge_method": "S256",
        "state": state,
        "resource": found.resource,
    }
    if scopes:
        params["scope"] = " ".join(scopes)
    separator = "&" if urlsplit(endpoint).query else "?"
    pending = PendingAuthorization(
        state=state,
        code_verifier=verifier,
        redirect_uri=config.redirect_uri,
        resource=found.resource,
        scopes=scopes,
        issuer=server.issuer,
        token_endpoint=server.token_endpoint,
        client=client,
        iss_parameter_supported=server.iss_parameter_supported,
        mcp_url=mcp_url,
        resource_metadata=found.metadata_url,
    )
    return AuthorizationStart(url=f"{endpoint}{separator}{urlencode(params)}", pending=pending)


def finish_authorization(
    legs: OAuthLegs,
    pending: PendingAuthorization,
    config: ClientConfig,
    wall: WallClock,
    *,
    code: str | None,
    state: str | None,
    iss: str | None,
) -> Grant:
    """Check the callback (state, then ``iss``) and exchange the code at the pinned token endpoint."""
    if not state or not hmac.compare_digest(state.encode(), pending.state.encode()):
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: the authorization callback's state is not the one sent; "
            "the code was not used.",
            reason="state_mismatch",
        )
    # RFC 9207 §2.4: simple string comparison; absent only where the server never promised it.
    if (iss is not None and iss != pending.issuer) or (iss is None and pending.iss_parameter_supported):
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: the authorization callback came from another issuer than "
            "the one asked (iss); the code was not used.",
            reason="issuer_mismatch",
        )
    if not code:
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: the authorization callback carried no code.",
            reason="token_error",
        )
    form = Sealed(
        grant_type="authorization_code",
        code=code,
        redirect_uri=pending.redirect_uri,
        code_verifier=pending.code_verifier,
        resource=pending.resource,
    )
    key = DpopKey.generate() if config.dpop else None
    answer = token_request(
        legs, pending.token_endpoint, pending.client, config, wall, form, refresh=False, dpop=key
    )
    return grant_from(
        answer,
        wall,
        issuer=pending.issuer,
        token_endpoint=pending.token_endpoint,
        resource=pending.resource,
        client=pending.client,
        requested=pending.scopes,
        grant_type="authorization_code",
        server=legs.server,
        mcp_url=pending.mcp_url,
        resource_metadata=pending.resource_metadata,
        dpop=key,
    )


def client_credentials(
    legs: OAuthLegs,
    mcp_url: str,
    config: ClientConfig,
    store: GrantStore,
    wall: WallClock,
    *,
    resource_metadata: str | None = None,
    challenged_scopes: tuple[str, ...] | None = None,
    previous_scopes: tuple[str, ...] = (),
    pinned_issuer: str | None = None,
    pinned_token_endpoint: str | None = None,
) -> Grant:
    """A token obtained with no person: client credentials, or a JWT bearer assertion a
    workload platform or an enterprise identity provider vouches for (federation.py).

    A renewal names the grant's pinned issuer and token endpoint: metadata that now names
    another token endpoint is ``server_changed``, and the secret is not sent at all.
    """
    found = _discover(legs, mcp_url, config, resource_metadata, pinned_issuer)
    if pinned_token_endpoint is not None and found.server.token_endpoint != pinned_token_endpoint:
        raise server_changed(
            legs.server,
            "its authorization server now names another token endpoint than the one it was authorized at",
        )
    scopes = _scopes(config, found, challenged_scopes, previous_scopes, wants_refresh=False)
    client = client_for(legs, config, found.server, store, scopes, wall)
    key = _dpop_key(legs.server, config, found)
    if config.grant == "workload":
        form = Sealed(grant_type=JWT_BEARER, assertion=workload_assertion(config, legs.server))
    elif config.grant == "enterprise":
        jag = identity_assertion(legs, config, found.server.issuer, found.resource, scopes)
        form = Sealed(grant_type=JWT_BEARER, assertion=jag)
    else:
        form = Sealed(grant_type="client_credentials")
    form["resource"] = found.resource
    if scopes:
        form["scope"] = " ".join(scopes)
    answer = token_request(
        legs, found.server.token_endpoint, client, config, wall, form, refresh=False, dpop=key
    )
    return grant_from(
        answer,
        wall,
        issuer=found.server.issuer,
        token_endpoint=found.server.token_endpoint,
        resource=found.resource,
        client=client,
        requested=scopes,
        grant_type=config.grant,
        server=legs.server,
        mcp_url=mcp_url,
        resource_metadata=found.metadata_url,
        dpop=key,
    )


def refresh(legs: OAuthLegs, grant: Grant, config: ClientConfig, wall: WallClock) -> Grant:
    """Spend ``grant``'s refresh token at its pinned token endpoint; a rotated one replaces it."""
    if not grant.refresh_token:
        raise AuthorizationError(
            "authorization_required",
            legs.server,
            f"MCP server {legs.server!r}: its access token expired and there is no refresh token; "
            "an operator must reconnect it.",
            reason="refresh_refused",
            scopes=grant.scopes,
        )
    form = Sealed(grant_type="refresh_token", refresh_token=grant.refresh_token, resource=grant.resource)
    # The grant's own key: a bound refresh token is refused with any other (RFC 9449 §5).
    key = usable_key(grant.dpop_key, legs.server)
    answer = token_request(
        legs, grant.token_endpoint, grant.client, config, wall, form, refresh=True, dpop=key
    )
    renewed = grant_from(
        answer,
        wall,
        issuer=grant.issuer,
        token_endpoint=grant.token_endpoint,
        resource=grant.resource,
        client=grant.client,
        requested=grant.scopes,
        grant_type=grant.grant_type,
        server=legs.server,
        mcp_url=grant.mcp_url,
        resource_metadata=grant.resource_metadata,
        dpop=key,
    )
    if renewed.refresh_token is None:
        # Not rotated: the old refresh token stays valid (RFC 6749 §6).
        renewed = replace(renewed, refresh_token=grant.refresh_token)
    return renewed


@dataclass(frozen=True)
class TokenAnswer:
    """A token endpoint's answer; its body holds the tokens, so it is out of repr."""

    status: int
    body: Sealed = field(repr=False)


def token_request(
    legs: OAuthLegs,
    token_endpoint: str,
    client: ClientRegistration,
    config: ClientConfig,
    wall: WallClock,
    form: Mapping[str, str],
    *,
    refresh: bool,
    dpop: DpopKey | None = None,
) -> TokenAnswer:
    """One token request; with a DPoP key, its proof, and once more with the server's nonce
    when it asks for one (a 400 ``use_dpop_nonce``: the grant was not looked at)."""
    nonce: str | None = None
    while True:
        answer = _post_token(legs, token_endpoint, client, config, wall, form, dpop, nonce)
        status, body = sealed(answer)
        if dpop is None or nonce is not None or status != 400 or body.get("error") != NONCE_ERROR:
            break
        nonce = server_nonce(_header(answer, "DPoP-Nonce"))
        if nonce is None:
            break
    if status == 200 and isinstance(body.get("access_token"), str) and body["access_token"]:
        return TokenAnswer(status, body)
    error = body.get("error")
    said = f", {clean(error, 60)}" if isinstance(error, str) else ""
    if refresh and status in (400, 401) and error in ("invalid_grant", "invalid_client", None):
        raise AuthorizationError(
            "authorization_required",
            legs.server,
            f"MCP server {legs.server!r}: its authorization server refused to renew the grant "
            f"(HTTP {status}{said}); an operator must reconnect it.",
            reason="refresh_refused",
        )
    raise AuthorizationError(
        "authorization_failed",
        legs.server,
        f"MCP server {legs.server!r}: its token endpoint refused the request (HTTP {status}{said}).",
        reason="token_error",
    )


def _post_token(
    legs: OAuthLegs,
    token_endpoint: str,
    client: ClientRegistration,
    config: ClientConfig,
    wall: WallClock,
    form: Mapping[str, str],
    dpop: DpopKey | None,
    nonce: str | None,
) -> Answer:
    # Built afresh per attempt: a client assertion and a DPoP proof are each good for one use.
    auth_form, headers = authenticate(client, config, wall, legs.server)
    if dpop is not None:
        headers["DPoP"] = dpop.proof("POST", token_endpoint, wall, nonce=nonce)
    return legs.post_form(token_endpoint, "token endpoint", Sealed(form, **auth_form), headers)


def _header(answer: Answer, name: str) -> str | None:
    wanted = name.lower()
    for key, value in answer.headers.items():
        if key.lower() == wanted:
            return value
    return None


def _dpop_key(server: str, config: ClientConfig, found: Discovered) -> DpopKey | None:
    """A new key for a new grant, where the operator asked for DPoP and the server can take it."""
    if not config.dpop:
        return None
    if not supports_es256(found.server.dpop_algorithms):
        raise _unsupported(server, "its authorization server does not accept DPoP proofs signed with ES256")
    return DpopKey.generate()


def grant_from(
    answer: TokenAnswer,
    wall: WallClock,
    *,
    issuer: str,
    token_endpoint: str,
    resource: str,
    client: ClientRegistration,
    requested: tuple[str, ...],
    grant_type: str,
    server: str,
    mcp_url: str,
    resource_metadata: str | None,
    dpop: DpopKey | None = None,
) -> Grant:
    body = answer.body
    token_type = body.get("token_type")
    kind = token_type.lower() if isinstance(token_type, str) else None
    if kind == "dpop" and dpop is None:
        raise _unsupported(
            server, "its authorization server issued a DPoP-bound token, and DPoP is not enabled"
        )
    if kind not in ("bearer", "dpop"):
        raise _unsupported(server, "its authorization server issued a token that is neither Bearer nor DPoP")
    lifetime = body.get("expires_in")
    expires_at = None
    if isinstance(lifetime, int | float) and not isinstance(lifetime, bool) and 0 < lifetime < 10**9:
        expires_at = wall.time() + float(lifetime)
    scope = body.get("scope")
    # The tokens are read last, straight into the grant (whose repr hides them).
    return Grant(
        access_token=str(body["access_token"]),
        issuer=issuer,
        token_endpoint=token_endpoint,
        resource=resource,
        client=client,
        expires_at=expires_at,
        refresh_token=nonempty(body.get("refresh_token")),
        scopes=tuple(dict.fromkeys(scope.split())) if isinstance(scope, str) else requested,
        grant_type=grant_type,
        mcp_url=mcp_url,
        resource_metadata=resource_metadata,
        # An AS may answer a proof with a Bearer token (RFC 9449 §5): not bound, sent as Bearer.
        token_type="DPoP" if kind == "dpop" else "Bearer",
        dpop_key=dpop.pem if dpop is not None and kind == "dpop" else None,
    )


@dataclass(frozen=True)
class Revocation:
    revoked: bool
    # Why not (not advertised, refused); "" when both tokens were revoked.
    note: str


def revoke(legs: OAuthLegs, grant: Grant, config: ClientConfig, wall: WallClock) -> Revocation:
    """Revoke ``grant``'s tokens (RFC 7009) at its pinned issuer only.

    The revocation endpoint is read from metadata that must name exactly that issuer
    (``issuer_mismatch`` otherwise): the tokens and the client's authentication go nowhere else.
    """
    metadata = server_metadata(legs, grant.issuer)
    if metadata is None or not metadata.revocation_endpoint:
        return Revocation(False, "the authorization server does not advertise revocation")
    endpoint = vet_url(
        metadata.revocation_endpoint,
        legs.server,
        "revocation endpoint",
        allow_private_networks=legs.allow_private_networks,
    )
    auth_form, headers = authenticate(grant.client, config, wall, legs.server)
    # The refresh token first: revoking it ends the whole grant (RFC 7009 §2.1).
    for token, hint in ((grant.refresh_token, "refresh_token"), (grant.access_token, "access_token")):
        if token:
            # RFC 7009 §2.2: success is HTTP 200 and the body means nothing.
            form = Sealed(auth_form, token=token, token_type_hint=hint)
            status = legs.post_form(endpoint, "revocation endpoint", form, headers, expect_json=False).status
            if status != 200:
                return Revocation(False, f"the authorization server refused revocation (HTTP {status})")
    return Revocation(True, "")


def _discover(
    legs: OAuthLegs, mcp_url: str, config: ClientConfig, resource_metadata: str | None, pinned: str | None
) -> Discovered:
    # A pre-registered client without its issuer is refused before any leg: its secret
    # would otherwise go to whichever authorization server the first challenge names.
    if config.lacks_issuer:
        raise not_configured(legs.server)
    return discover(legs, mcp_url, resource_metadata, pinned_issuer=pinned, configured_issuer=config.issuer)


def _scopes(
    config: ClientConfig,
    found: Discovered,
    challenged: tuple[str, ...] | None,
    previous: tuple[str, ...],
    *,
    wants_refresh: bool,
) -> tuple[str, ...]:
    if config.scopes is not None:
        chosen = config.scopes
    else:
        supported = found.protected.scopes_supported if found.protected else None
        chosen = select_scopes(
            challenged, supported, found.server.scopes_supported, wants_refresh=wants_refresh
        )
    # Step-up asks for the union: what was granted before must not be lost.
    return union_scopes(previous, chosen)


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _unsupported(server: str, what: str) -> AuthorizationError:
    return AuthorizationError(
        "authorization_failed", server, f"MCP server {server!r}: {what}.", reason="unsupported"
    )
