"""The grants: PKCE start/finish with state and iss, client credentials, refresh with rotation."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from nr_llm.mcp.oauth import (
    ClientConfig,
    Grant,
    MemoryGrantStore,
    PendingAuthorization,
    client_credentials,
    finish_authorization,
    refresh,
    start_authorization,
)
from nr_llm.mcp.oauth.identity import application_type
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.errors import AuthorizationError

from .world import AUTHORIZE, ISSUER, MCP, REGISTER, TOKEN, World, as_metadata, legs_for

REDIRECT = "https://site.example/admin/oauth/callback"


def _start(world: World, deadline, wall, config: ClientConfig | None = None, **kwargs):
    world.serve_discovery(**kwargs)
    world.serve_registration()
    config = config or ClientConfig(redirect_uri=REDIRECT)
    return start_authorization(legs_for(deadline), MCP, config, MemoryGrantStore(), wall), config


def test_start_builds_a_pkce_s256_request_with_state_and_resource(world: World, deadline, wall) -> None:
    """The browser URL carries S256 of the kept verifier, the kept state, the resource and the scopes."""
    started, _ = _start(
        world,
        deadline,
        wall,
        prm={"resource": MCP, "authorization_servers": [ISSUER], "scopes_supported": ["read", "write"]},
    )
    query = {k: v[0] for k, v in parse_qs(urlsplit(started.url).query).items()}
    verifier = started.pending.code_verifier
    expected = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert started.url.startswith(AUTHORIZE + "?")
    assert query["code_challenge"] == expected and query["code_challenge_method"] == "S256"
    assert query["state"] == started.pending.state and len(started.pending.state) >= 32
    assert 43 <= len(verifier) <= 128
    assert query["resource"] == MCP and query["scope"] == "read write"
    assert query["client_id"] == "dyn-client" and query["redirect_uri"] == REDIRECT
    assert "code_verifier" not in started.url


def test_start_registers_with_refresh_token_grant(world: World, deadline, wall) -> None:
    """Dynamic registration asks for authorization_code and refresh_token and an AS-supported method."""
    _start(world, deadline, wall)
    registration = next(s for s in world.sent if s.url == REGISTER)
    assert registration.json is not None
    assert registration.json["grant_types"] == ["authorization_code", "refresh_token"]
    assert registration.json["token_endpoint_auth_method"] == "client_secret_basic"
    assert registration.json["redirect_uris"] == [REDIRECT]
    assert registration.json["application_type"] == "web"


@pytest.mark.parametrize(
    ("redirect", "expected"),
    [
        ("http://localhost:8000/cb", "native"),
        ("http://127.0.0.1/cb", "native"),
        ("http://[::1]:8000/cb", "native"),
        ("https://site.example/cb", "web"),
        (None, "web"),
    ],
)
def test_application_type_follows_the_redirect_host(redirect: str | None, expected: str) -> None:
    """SEP-837: a site on localhost registers as native, any other as web."""
    assert application_type(redirect) == expected


def test_offline_access_only_when_the_server_lists_it(world: World, deadline, wall) -> None:
    """offline_access joins the chosen scopes when the AS supports it, never otherwise."""
    started, _ = _start(
        world,
        deadline,
        wall,
        prm={"resource": MCP, "authorization_servers": [ISSUER], "scopes_supported": ["read"]},
        metadata=as_metadata(scopes_supported=["read", "offline_access"]),
    )
    assert started.pending.scopes == ("read", "offline_access")


def test_no_scope_parameter_when_nothing_names_one(world: World, deadline, wall) -> None:
    """Neither challenge nor PRM scopes: the scope parameter is omitted."""
    started, _ = _start(world, deadline, wall)
    assert "scope" not in parse_qs(urlsplit(started.url).query)


def test_pkce_without_s256_support_is_refused(world: World, deadline, wall) -> None:
    """An AS not advertising S256 is not used for the authorization code grant."""
    with pytest.raises(AuthorizationError) as caught:
        _start(world, deadline, wall, metadata=as_metadata(code_challenge_methods_supported=None))
    assert caught.value.reason == "unsupported"


def test_pending_authorization_round_trips_and_hides_its_secrets(world: World, deadline, wall) -> None:
    """What is kept between the steps survives as_dict/from_dict; repr shows neither state nor verifier."""
    started, _ = _start(world, deadline, wall)
    pending = started.pending
    assert PendingAuthorization.from_dict(pending.as_dict()) == pending
    shown = repr(started) + repr(pending)
    assert pending.state not in shown and pending.code_verifier not in shown and "dyn-secret" not in shown


def _finish(world: World, deadline, wall, started, config, **callback):
    world.serve_token_endpoint()
    return finish_authorization(legs_for(deadline), started.pending, config, wall, **callback)


def test_finish_exchanges_the_code_with_the_verifier_and_the_same_resource(
    world: World, deadline, wall
) -> None:
    """The token request has the code, the verifier, the redirect URI and the resource of the start."""
    started, config = _start(world, deadline, wall)
    grant = _finish(
        world, deadline, wall, started, config, code="c-1", state=started.pending.state, iss=ISSUER
    )
    token = world.sent[-1]
    assert token.url == TOKEN
    assert token.form == {
        "grant_type": "authorization_code",
        "code": "c-1",
        "redirect_uri": REDIRECT,
        "code_verifier": started.pending.code_verifier,
        "resource": MCP,
    }
    assert token.headers["Authorization"] == "Basic " + base64.b64encode(b"dyn-client:dyn-secret").decode()
    assert grant.access_token == "access-1" and grant.refresh_token == "refresh-1"
    assert grant.expires_at == wall.now + 3600 and (grant.issuer, grant.token_endpoint) == (ISSUER, TOKEN)


@pytest.mark.parametrize(
    ("state_ok", "iss", "supported", "reason"),
    [
        (False, ISSUER, True, "state_mismatch"),
        (True, "https://192.0.2.66", True, "issuer_mismatch"),
        (True, ISSUER + "/", True, "issuer_mismatch"),  # RFC 9207: simple string comparison
        (True, None, True, "issuer_mismatch"),  # promised by the AS, missing in the callback
        (True, "https://192.0.2.66", False, "issuer_mismatch"),  # present and wrong, even unpromised
    ],
)
def test_a_callback_that_does_not_fit_uses_no_code(
    world: World, deadline, wall, state_ok, iss, supported, reason
):
    """Wrong state, wrong or missing iss: authorization_failed, and the token endpoint is never asked."""
    started, config = _start(
        world, deadline, wall, metadata=as_metadata(authorization_response_iss_parameter_supported=supported)
    )
    state = started.pending.state if state_ok else "forged"
    with pytest.raises(AuthorizationError) as caught:
        _finish(world, deadline, wall, started, config, code="c", state=state, iss=iss)
    assert caught.value.reason == reason and TOKEN not in world.urls()


def test_an_absent_iss_is_accepted_when_never_promised(world: World, deadline, wall) -> None:
    """Without authorization_response_iss_parameter_supported, a callback without iss is fine."""
    started, config = _start(
        world, deadline, wall, metadata=as_metadata(authorization_response_iss_parameter_supported=None)
    )
    grant = _finish(world, deadline, wall, started, config, code="c", state=started.pending.state, iss=None)
    assert grant.access_token == "access-1"


def _pem_key() -> tuple[str, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key.public_key()


def test_client_credentials_with_private_key_jwt(world: World, deadline, wall) -> None:
    """An ES256 assertion: iss = sub = client id, aud = the issuer, short-lived; no secret is sent."""
    pem, public = _pem_key()
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=["private_key_jwt"]))
    world.serve_token_endpoint()
    config = ClientConfig(grant="client_credentials", client_id="svc", private_key_pem=pem, issuer=ISSUER)
    grant = client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    form = world.sent[-1].form
    assert form["grant_type"] == "client_credentials" and form["resource"] == MCP
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    claims = jwt.decode(
        form["client_assertion"],
        public,
        algorithms=["ES256"],
        audience=ISSUER,
        options={"verify_exp": False, "verify_iat": False},
    )
    assert claims["iss"] == claims["sub"] == "svc" and claims["exp"] - claims["iat"] == 60
    assert "Authorization" not in world.sent[-1].headers
    assert grant.grant_type == "client_credentials"
    assert pem not in repr(config)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(world: World, deadline, wall, method: str) -> None:
    """A pre-registered secret goes as Basic or as form fields, whichever the AS supports."""
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=[method]))
    world.serve_token_endpoint()
    config = ClientConfig(grant="client_credentials", client_id="svc", client_secret="s3cret", issuer=ISSUER)
    client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    sent = world.sent[-1]
    if method == "client_secret_basic":
        assert sent.headers["Authorization"] == "Basic " + base64.b64encode(b"svc:s3cret").decode()
        assert "client_secret" not in sent.form
    else:
        assert sent.form["client_secret"] == "s3cret" and "Authorization" not in sent.headers
    assert "s3cret" not in repr(config)


def _grant(**overrides: Any) -> Grant:
    values: dict[str, Any] = {
        "access_token": "old-access",
        "issuer": ISSUER,
        "token_endpoint": TOKEN,
        "resource": MCP,
        "client": ClientRegistration(ISSUER, "cid", "csecret", "client_secret_post"),
        "expires_at": 0.0,
        "refresh_token": "old-refresh",
        "scopes": ("read",),
    }
    values.update(overrides)
    return Grant(**values)


def test_refresh_rotates_and_goes_only_to_the_pinned_token_endpoint(world: World, deadline, wall) -> None:
    """One POST to the pinned endpoint with the refresh token and resource; the rotated token replaces it."""
    world.serve_token_endpoint()
    renewed = refresh(legs_for(deadline), _grant(), ClientConfig(), wall)
    assert world.urls() == [TOKEN]
    assert world.sent[0].form == {
        "grant_type": "refresh_token",
        "refresh_token": "old-refresh",
        "resource": MCP,
        "client_id": "cid",
        "client_secret": "csecret",
    }
    assert (renewed.access_token, renewed.refresh_token, renewed.scopes) == (
        "access-1",
        "refresh-1",
        ("read",),
    )


def test_a_refresh_without_rotation_keeps_the_old_refresh_token(world: World, deadline, wall) -> None:
    """An answer without refresh_token leaves the current one in place (RFC 6749 §6)."""
    world.token_answers.append((200, {"access_token": "a2", "token_type": "bearer", "expires_in": 60}))
    world.serve_token_endpoint()
    renewed = refresh(legs_for(deadline), _grant(), ClientConfig(), wall)
    assert (renewed.access_token, renewed.refresh_token) == ("a2", "old-refresh")


def test_a_refused_refresh_needs_a_person(world: World, deadline, wall) -> None:
    """invalid_grant on refresh is authorization_required/refresh_refused; no token or secret in the error."""
    world.token_answers.append((400, {"error": "invalid_grant"}))
    world.serve_token_endpoint()
    with pytest.raises(AuthorizationError) as caught:
        refresh(legs_for(deadline), _grant(), ClientConfig(), wall)
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "refresh_refused")
    assert "old-refresh" not in str(caught.value) and "csecret" not in repr(caught.value)


def test_a_token_that_is_not_bearer_is_refused(world: World, deadline, wall) -> None:
    """A DPoP-bound or unknown token type is not sent as a Bearer token."""
    world.token_answers.append((200, {"access_token": "a", "token_type": "DPoP"}))
    world.serve_token_endpoint()
    with pytest.raises(AuthorizationError) as caught:
        refresh(legs_for(deadline), _grant(), ClientConfig(), wall)
    assert caught.value.reason == "unsupported"


def test_grant_repr_hides_tokens_and_secrets() -> None:
    """Neither access nor refresh token nor client secret appears in a Grant's repr."""
    shown = repr(_grant())
    assert "old-access" not in shown and "old-refresh" not in shown and "csecret" not in shown
