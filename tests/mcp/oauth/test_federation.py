"""JWT bearer grants a workload platform or an enterprise identity provider vouches for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nr_llm.mcp.oauth import ClientConfig, MemoryGrantStore, client_credentials
from nr_llm.mcp.oauth.federation import ID_JAG, ID_TOKEN, TOKEN_EXCHANGE
from nr_llm.mcp.oauth.identity import JWT_BEARER
from nr_llm.mcp.wire.errors import AuthorizationError

from .world import ISSUER, MCP, TOKEN, World, as_metadata, legs_for

WORKLOAD_JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl"
ID_TOKEN_VALUE = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.aWQtc2ln"
JAG = "eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.eyJzdWIiOiJhbGljZSJ9.amFnLXNpZw"
IDP_TOKEN = "https://192.0.2.3/token"


def _serve(world: World, methods: list[str]) -> None:
    world.serve_discovery(metadata=as_metadata(token_endpoint_auth_methods_supported=methods))
    world.serve_token_endpoint()


def test_workload_assertion_from_a_mounted_file(world: World, deadline, wall, tmp_path: Path) -> None:
    """The file's JWT is the assertion of a jwt-bearer grant; the client is public (auth none)."""
    mounted = tmp_path / "token"
    mounted.write_text(WORKLOAD_JWT + "\n")
    _serve(world, ["none"])
    config = ClientConfig(grant="workload", client_id="wl", issuer=ISSUER, assertion_file=str(mounted))
    grant = client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    form = world.sent[-1].form
    assert form == {"grant_type": JWT_BEARER, "assertion": WORKLOAD_JWT, "resource": MCP, "client_id": "wl"}
    assert grant.grant_type == "workload"


def test_workload_assertion_from_the_environment(
    world: World, deadline, wall, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WL_TOKEN", WORKLOAD_JWT)
    _serve(world, ["none"])
    config = ClientConfig(grant="workload", client_id="wl", issuer=ISSUER, assertion_env="WL_TOKEN")
    client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    assert world.sent[-1].form["assertion"] == WORKLOAD_JWT


@pytest.mark.parametrize("content", [None, "", "not a jwt", "a.b.c" * 20000])
def test_no_usable_workload_assertion_sends_nothing(
    world: World, deadline, wall, tmp_path: Path, content: str | None
) -> None:
    """Missing, empty, not a JWT or oversized: refused before the token endpoint, content never quoted."""
    mounted = tmp_path / "token"
    if content is not None:
        mounted.write_text(content)
    _serve(world, ["none"])
    config = ClientConfig(grant="workload", client_id="wl", issuer=ISSUER, assertion_file=str(mounted))
    with pytest.raises(AuthorizationError) as caught:
        client_credentials(legs_for(deadline), MCP, config, MemoryGrantStore(), wall)
    assert caught.value.reason == "unsupported" and TOKEN not in world.urls()
    assert "not a jwt" not in str(caught.value) and str(tmp_path) not in str(caught.value)


def _idp(world: World, status: int = 200, body: dict[str, Any] | None = None) -> None:
    answer = (
        body if body is not None else {"access_token": JAG, "issued_token_type": ID_JAG, "token_type": "N_A"}
    )

    def callback(request: Any) -> tuple[int, dict[str, str], str]:
        world.record(request)
        return status, {"Content-Type": "application/json"}, json.dumps(answer)

    world.mock.add_callback("POST", IDP_TOKEN, callback=callback)


def _enterprise(id_token: str | None = ID_TOKEN_VALUE) -> ClientConfig:
    return ClientConfig(
        grant="enterprise",
        client_id="site",
        client_secret="site-secret",
        issuer=ISSUER,
        idp_token_endpoint=IDP_TOKEN,
        idp_client_id="site-at-idp",
        identity_token=lambda: id_token,
    )


def test_enterprise_exchanges_the_id_token_then_presents_the_id_jag(world: World, deadline, wall) -> None:
    """RFC 8693 at the IdP (audience the issuer, resource the MCP server), then the JWT bearer grant."""
    _serve(world, ["client_secret_basic"])
    _idp(world)
    grant = client_credentials(legs_for(deadline), MCP, _enterprise(), MemoryGrantStore(), wall)
    exchange, bearer = (sent for sent in world.sent if sent.method == "POST")
    assert exchange.url == IDP_TOKEN and exchange.form == {
        "grant_type": TOKEN_EXCHANGE,
        "requested_token_type": ID_JAG,
        "audience": ISSUER,
        "resource": MCP,
        "subject_token": ID_TOKEN_VALUE,
        "subject_token_type": ID_TOKEN,
        "client_id": "site-at-idp",
    }
    assert bearer.url == TOKEN and bearer.form == {
        "grant_type": JWT_BEARER,
        "assertion": JAG,
        "resource": MCP,
    }
    assert bearer.headers["Authorization"].startswith("Basic ")
    assert grant.grant_type == "enterprise"
    assert ID_TOKEN_VALUE not in repr(_enterprise())


def test_no_identity_token_needs_the_user_and_sends_nothing(world: World, deadline, wall) -> None:
    _serve(world, ["client_secret_basic"])
    with pytest.raises(AuthorizationError) as caught:
        client_credentials(legs_for(deadline), MCP, _enterprise(None), MemoryGrantStore(), wall)
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "not_authorized")
    assert IDP_TOKEN not in world.urls() and TOKEN not in world.urls()


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [(400, "invalid_grant", "authorization_required"), (403, "access_denied", "authorization_failed")],
)
def test_a_refused_exchange_ends_cleanly(
    world: World, deadline, wall, status: int, error: str, kind: str
) -> None:
    """No JWT bearer request follows, and neither the ID token nor the client secret is in the error."""
    _serve(world, ["client_secret_basic"])
    _idp(world, status, {"error": error, "error_description": ID_TOKEN_VALUE})
    with pytest.raises(AuthorizationError) as caught:
        client_credentials(legs_for(deadline), MCP, _enterprise(), MemoryGrantStore(), wall)
    assert caught.value.kind == kind and TOKEN not in world.urls()
    for secret in (ID_TOKEN_VALUE, "site-secret"):
        assert secret not in str(caught.value) and secret not in repr(caught.value)
