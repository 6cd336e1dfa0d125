"""Assertions another party vouches for, presented with the JWT bearer grant (RFC 7523 §2.1).

Two sources, each an operator's opt-in per server:

- workload identity federation (SEP-1933): the platform the site runs on (Kubernetes,
  a cloud's workload identity) mounts a short-lived JWT in a file or an environment
  variable; it is read afresh for every grant, since the platform rotates it.
- enterprise-managed authorization (SEP-990): the acting user's ID token, which the site
  supplies through a hook (its OIDC login keeps it), is exchanged at the enterprise's
  identity provider (RFC 8693) for an ID-JAG naming this authorization server as audience
  and the MCP server as resource; the ID-JAG is the assertion.

Neither assertion is ever logged, raised or kept: each goes straight into a sealed form.
A refusal is reported with the status and error code only, and is not retried with
another grant type (the specification's rule: surface it, do not fall back).
"""

from __future__ import annotations

import base64
import os
from urllib.parse import quote

from ..wire.errors import AuthorizationError
from ..wire.text import clean
from .identity import ClientConfig
from .legs import OAuthLegs, vet_url
from .sealed import Sealed, sealed

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
# A JWT is a few kilobytes; a larger file is not one (and is not read whole).
MAX_ASSERTION_BYTES = 64 * 1024


def workload_assertion(config: ClientConfig, server: str) -> str:
    """The workload's JWT from the mounted file or the environment variable, or a typed refusal."""
    value = ""
    where = "no file or environment variable is configured"
    try:
        if config.assertion_file:
            where = "the configured file is missing, unreadable or empty"
            with open(config.assertion_file, "rb") as mounted:
                value = mounted.read(MAX_ASSERTION_BYTES + 1).decode("ascii").strip()
        elif config.assertion_env:
            where = "the configured environment variable is unset or empty"
            value = os.environ.get(config.assertion_env, "").strip()
    except (OSError, UnicodeDecodeError):
        value = ""
    if not value or len(value) > MAX_ASSERTION_BYTES or not _compact_jwt(value):
        raise AuthorizationError(
            "authorization_failed",
            server,
            f"MCP server {server!r}: no usable workload identity assertion ({where}, or it is not "
            "a JWT); nothing was sent.",
            reason="unsupported",
        )
    return value


def identity_assertion(
    legs: OAuthLegs, config: ClientConfig, issuer: str, resource: str, scopes: tuple[str, ...]
) -> str:
    """An ID-JAG for ``issuer`` and ``resource``, exchanged for the acting user's ID token."""
    server = legs.server
    id_token = config.identity_token() if config.identity_token is not None else None
    if not id_token:
        raise AuthorizationError(
            "authorization_required",
            server,
            f"MCP server {server!r}: the site supplied no identity token for the acting user "
            "(enterprise-managed authorization); the user must sign in to the site again.",
            reason="not_authorized",
        )
    if not config.idp_token_endpoint or not config.idp_client_id:
        raise AuthorizationError(
            "authorization_failed",
            server,
            f"MCP server {server!r}: enterprise-managed authorization needs the identity provider's "
            "token endpoint and this site's client id there; nothing was sent.",
            reason="unsupported",
        )
    endpoint = vet_url(
        config.idp_token_endpoint,
        server,
        "identity provider token endpoint",
        allow_private_networks=legs.allow_private_networks,
    )
    form = Sealed(
        grant_type=TOKEN_EXCHANGE,
        requested_token_type=ID_JAG,
        audience=issuer,
        resource=resource,
        subject_token=id_token,
        subject_token_type=ID_TOKEN,
    )
    if scopes:
        form["scope"] = " ".join(scopes)
    headers = Sealed()
    if config.idp_client_secret:
        pair = f"{quote(config.idp_client_id, safe='')}:{quote(config.idp_client_secret, safe='')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    else:
        form["client_id"] = config.idp_client_id
    status, body = sealed(legs.post_form(endpoint, "identity provider token endpoint", form, headers))
    jag = body.get("access_token")
    if (
        status == 200
        and body.get("issued_token_type") == ID_JAG
        and isinstance(jag, str)
        and _compact_jwt(jag)
    ):
        return jag
    error = body.get("error")
    said = f", {clean(error, 60)}" if isinstance(error, str) else ""
    if status == 400 and error == "invalid_grant":
        # The identity token itself was refused (expired, revoked): only a new sign-in helps.
        raise AuthorizationError(
            "authorization_required",
            server,
            f"MCP server {server!r}: the identity provider refused the user's identity token "
            f"(HTTP {status}{said}); the user must sign in to the site again.",
            reason="not_authorized",
        )
    raise AuthorizationError(
        "authorization_failed",
        server,
        f"MCP server {server!r}: the identity provider refused the token exchange for an ID-JAG "
        f"(HTTP {status}{said}).",
        reason="token_error",
    )


def _compact_jwt(value: str) -> bool:
    parts = value.split(".")
    return len(parts) == 3 and all(parts[:2]) and value.isascii() and not any(c.isspace() for c in value)
