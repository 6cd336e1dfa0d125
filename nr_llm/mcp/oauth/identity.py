"""Who the client is at an authorization server, and how it proves it at the token endpoint.

Three identities (MCP authorization, "Client Registration Approaches"): pre-registered
(an operator's client id with a secret or a private key), a client ID metadata document
(an HTTPS URL the site serves, used as ``client_id`` where the server supports it), and
dynamic registration (RFC 7591), kept per issuer so it happens once.

Secrets leave only as the token endpoint's client authentication, built here: Basic or
form fields for a secret, a short-lived signed assertion (RFC 7523, ``aud`` the issuer)
for a key. The assertion is signed by PyJWT over ``cryptography``; no hand-rolled JWT.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import quote, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from ..wire.errors import AuthorizationError
from ..wire.text import clean
from .discovery import AuthorizationServer, nonempty, same_issuer
from .legs import OAuthLegs
from .sealed import Sealed, sealed
from .store import ClientRegistration, GrantStore

# "enterprise": an ID-JAG from the user's identity provider, then the JWT bearer grant (SEP-990);
# "workload": a JWT the platform mounts, presented with the JWT bearer grant (SEP-1933).
GrantType = Literal["authorization_code", "client_credentials", "enterprise", "workload"]
# The grants a client obtains on its own, inside an operation, with no person in between.
WITHOUT_PERSON = ("client_credentials", "enterprise", "workload")
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
# RFC 7523 §2.1: an assertion presented as the authorization grant itself.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# Short: an intercepted assertion is useless a minute later (RFC 7523 §3, "exp").
ASSERTION_SECONDS = 60


class WallClock(Protocol):
    """Epoch seconds: token expiry is absolute, so it survives a restart (not monotonic)."""

    def time(self) -> float: ...


@dataclass(frozen=True)
class ClientConfig:
    """The operator's choices for one server."""

    grant: GrantType = "authorization_code"
    redirect_uri: str | None = None
    client_id: str | None = None
    # The authorization server (issuer) a pre-registered client belongs to: discovery must
    # find exactly it, or the client's secret is sent nowhere (required with ``client_id``).
    issuer: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    private_key_pem: str | None = field(default=None, repr=False)
    key_id: str | None = None
    # A client ID metadata document's HTTPS URL, used as client_id where supported.
    client_metadata_url: str | None = None
    client_name: str = "nr-llm"
    # Scopes an operator insists on; None: chosen by the specification's strategy.
    scopes: tuple[str, ...] | None = None
    # A preferred token endpoint authentication method for a secret; None: the AS's first.
    auth_method: str | None = None
    # DPoP (RFC 9449): bind every token of this server to a key of its grant's own.
    dpop: bool = False
    # Enterprise-managed authorization: the identity provider's token endpoint and this
    # site's client there; ``identity_token`` gives the acting user's ID token (or None).
    idp_token_endpoint: str | None = None
    idp_client_id: str | None = None
    idp_client_secret: str | None = field(default=None, repr=False)
    identity_token: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    # Workload identity federation: where the platform mounts the workload's JWT.
    assertion_file: str | None = None
    assertion_env: str | None = None

    @property
    def without_person(self) -> bool:
        """Whether the client obtains its grant itself, inside an operation."""
        return self.grant in WITHOUT_PERSON

    @property
    def lacks_issuer(self) -> bool:
        """A pre-registered client without its issuer: its secret may go nowhere."""
        return bool(self.client_id) and not self.issuer


def client_for(
    legs: OAuthLegs,
    config: ClientConfig,
    server: AuthorizationServer,
    store: GrantStore,
    scopes: tuple[str, ...],
    wall: WallClock,
) -> ClientRegistration:
    """The client identity to use at ``server``: configured, a metadata URL, stored, or registered now."""
    if config.client_metadata_url and not valid_metadata_url(config.client_metadata_url):
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: the client metadata document URL must be https with a path.",
            reason="unsupported",
        )
    if config.client_id:
        # Discovery has refused both cases already; checked again where the secret is bound,
        # so that no new caller of client_for can skip it.
        if not config.issuer or not same_issuer(config.issuer, server.issuer):
            raise not_configured(legs.server) if not config.issuer else _foreign(legs.server)
        return ClientRegistration(
            issuer=server.issuer,
            client_id=config.client_id,
            client_secret=config.client_secret,
            auth_method=_configured_method(legs.server, config, server),
            origin="preregistered",
        )
    if (
        config.client_metadata_url
        and server.client_id_metadata_document_supported
        and config.grant == "authorization_code"
    ):
        return ClientRegistration(
            issuer=server.issuer,
            client_id=config.client_metadata_url,
            auth_method="private_key_jwt" if config.private_key_pem else "none",
            origin="metadata_document",
        )
    stored = store.load_registration(legs.server, server.issuer)
    if stored is not None and not _expired(stored, wall):
        return stored
    registration = register(legs, config, server, scopes)
    store.save_registration(legs.server, registration)
    return registration


def not_configured(server: str) -> AuthorizationError:
    """A pre-registered client without its issuer: refused before anything is sent anywhere."""
    return AuthorizationError(
        "authorization_required",
        server,
        f"MCP server {server!r}: its pre-registered client names no authorization server (issuer); "
        "nothing was sent. An operator must enter the issuer on the server's page.",
        reason="issuer_not_configured",
    )


def _foreign(server: str) -> AuthorizationError:
    return AuthorizationError(
        "authorization_failed",
        server,
        f"MCP server {server!r}: its authorization server is not the issuer configured for its "
        "pre-registered client; the client's secret was not sent.",
        reason="issuer_mismatch",
    )


def _expired(registration: ClientRegistration, wall: WallClock) -> bool:
    return bool(registration.secret_expires_at) and wall.time() >= (registration.secret_expires_at or 0)


def _configured_method(server_name: str, config: ClientConfig, server: AuthorizationServer) -> str:
    if config.private_key_pem:
        wanted = ["private_key_jwt"]
    elif config.client_secret:
        wanted = [config.auth_method] if config.auth_method else ["client_secret_basic", "client_secret_post"]
    else:
        wanted = ["none"]
    for method in server.token_endpoint_auth_methods:
        if method in wanted:
            return method
    if not server.from_metadata:
        return wanted[0]  # no metadata to consult: the credential decides
    raise AuthorizationError(
        "authorization_failed",
        server_name,
        f"MCP server {server_name!r}: its authorization server supports none of the client "
        f"authentication methods the configured credential allows ({', '.join(wanted)}).",
        reason="unsupported",
    )


def register(
    legs: OAuthLegs, config: ClientConfig, server: AuthorizationServer, scopes: tuple[str, ...]
) -> ClientRegistration:
    """Dynamic client registration (RFC 7591)."""
    if not server.registration_endpoint:
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: its authorization server offers no dynamic registration; "
            "configure a pre-registered client id.",
            reason="unsupported",
        )
    method = _registration_method(server, config)
    grant_types = {
        "authorization_code": ["authorization_code", "refresh_token"],
        "client_credentials": ["client_credentials"],
    }.get(config.grant, [JWT_BEARER])
    metadata: dict[str, object] = {
        "client_name": config.client_name,
        "grant_types": grant_types,
        "response_types": ["code"] if config.grant == "authorization_code" else [],
        "token_endpoint_auth_method": method,
        "application_type": application_type(config.redirect_uri),
    }
    if config.redirect_uri:
        metadata["redirect_uris"] = [config.redirect_uri]
    if scopes:
        metadata["scope"] = " ".join(scopes)
    # The answer holds the client's secret: sealed at once (see sealed.py).
    endpoint = server.registration_endpoint
    status, body = sealed(legs.post_json(endpoint, "client registration endpoint", metadata))
    client_id = body.get("client_id")
    if status not in (200, 201) or not isinstance(client_id, str) or not client_id:
        raise AuthorizationError(
            "authorization_failed",
            legs.server,
            f"MCP server {legs.server!r}: its authorization server refused the client registration "
            f"(HTTP {status}{_oauth_error(body)}).",
            reason="registration",
        )
    granted_method = body.get("token_endpoint_auth_method")
    expires = body.get("client_secret_expires_at")
    return ClientRegistration(
        issuer=server.issuer,
        client_id=client_id,
        client_secret=nonempty(body.get("client_secret")),
        auth_method=granted_method if isinstance(granted_method, str) else method,
        secret_expires_at=float(expires) if isinstance(expires, int | float) and expires > 0 else None,
        origin="dynamic",
    )


def application_type(redirect_uri: str | None) -> str:
    """SEP-837: "native" for a site reached on localhost (a developer's machine), else "web"."""
    host = urlsplit(redirect_uri).hostname if redirect_uri else None
    if host is not None and (host == "localhost" or host.endswith(".localhost")):
        return "native"
    try:
        return "native" if host is not None and ipaddress.ip_address(host).is_loopback else "web"
    except ValueError:
        return "web"


def _registration_method(server: AuthorizationServer, config: ClientConfig) -> str:
    # A confidential client where the server allows one: a secret nobody can use
    # without the server-side store beats a public client.
    if config.auth_method and config.auth_method in server.token_endpoint_auth_methods:
        return config.auth_method
    for method in ("client_secret_basic", "client_secret_post", "none"):
        if method in server.token_endpoint_auth_methods:
            return method
    return server.token_endpoint_auth_methods[0] if server.token_endpoint_auth_methods else "none"


def authenticate(
    client: ClientRegistration, config: ClientConfig, wall: WallClock, server: str
) -> tuple[Sealed, Sealed]:
    """The form fields and headers that authenticate ``client`` at its token endpoint (sealed:
    they hold the secret or the assertion)."""
    form, headers = _authentication(client, config, wall, server)
    return Sealed(form), Sealed(headers)


def _authentication(
    client: ClientRegistration, config: ClientConfig, wall: WallClock, server: str
) -> tuple[dict[str, str], dict[str, str]]:
    method = client.auth_method
    if method == "private_key_jwt":
        return {
            "client_id": client.client_id,
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": sign_assertion(client.client_id, client.issuer, config, wall, server),
        }, {}
    if method in ("client_secret_basic", "client_secret_post") and not client.client_secret:
        raise AuthorizationError(
            "authorization_failed",
            server,
            f"MCP server {server!r}: its client authentication needs a client secret and none is known.",
            reason="unsupported",
        )
    if method == "client_secret_basic":
        # RFC 6749 §2.3.1: id and secret are form-encoded before Basic encoding.
        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret or '', safe='')}"
        return {}, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    if method == "client_secret_post":
        return {"client_id": client.client_id, "client_secret": client.client_secret or ""}, {}
    return {"client_id": client.client_id}, {}


def sign_assertion(client_id: str, issuer: str, config: ClientConfig, wall: WallClock, server: str) -> str:
    """A private_key_jwt client assertion: ES256 for an EC key, RS256 for RSA, audience the issuer."""
    problem = AuthorizationError(
        "authorization_failed",
        server,
        f"MCP server {server!r}: the configured private key is not a usable PEM EC (P-256) or RSA key.",
        reason="unsupported",
    )
    try:
        key = load_pem_private_key((config.private_key_pem or "").encode(), password=None)
    except (ValueError, TypeError):
        raise problem from None  # the key's bytes must not reach a traceback
    if isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1):
        algorithm = "ES256"
    elif isinstance(key, rsa.RSAPrivateKey):
        algorithm = "RS256"
    else:
        raise problem
    now = int(wall.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": issuer,
        "iat": now,
        "exp": now + ASSERTION_SECONDS,
        "jti": secrets.token_urlsafe(16),
    }
    headers = {"kid": config.key_id} if config.key_id else None
    return jwt.encode(claims, key, algorithm=algorithm, headers=headers)


def _oauth_error(body: Mapping[str, object]) -> str:
    error = body.get("error")
    return f", {clean(error, 60)}" if isinstance(error, str) else ""


def valid_metadata_url(url: str | None) -> bool:
    """A client ID metadata document URL: HTTPS with a path (the specification's rule)."""
    if not url:
        return False
    parts = urlsplit(url)
    return parts.scheme == "https" and parts.path not in ("", "/")
