"""OAuth in the client: the token source spends the operation's one budget, and only the
MCP URL ever sees the access token. Counts every HTTP leg of a tool call."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import ClientConfig, Grant, MemoryGrantStore, OAuthSettings
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.errors import AuthorizationError, McpTransportError

from ..scripted import URL, ScriptedServer
from .world import AS_METADATA, ISSUER, TOKEN, FakeWall, World, as_metadata

PRM = "http://192.0.2.1/.well-known/oauth-protected-resource/mcp"
CHALLENGE = f'Bearer resource_metadata="{PRM}", scope="tools"'


class ProtectedServer:
    """The scripted MCP server behind a bearer check: a token not in ``valid`` gets a 401."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.mcp = ScriptedServer(world.clock)
        self.valid: set[str] = set()
        self.refused = 0

    def install(self) -> None:
        self.world.mock.add_callback("POST", URL, callback=self._answer)
        self.world.mock.add_callback("DELETE", URL, callback=self._answer)
        self.world.serve("GET", PRM, body={"resource": URL, "authorization_servers": [ISSUER]})
        self.world.serve("GET", AS_METADATA, body=as_metadata())

    def _answer(self, request: Any) -> tuple[int, dict[str, str], str]:
        self.world.record(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in self.valid:
            self.refused += 1
            return 401, {"WWW-Authenticate": CHALLENGE}, ""
        return self.mcp._answer(request)


@pytest.fixture
def server(world: World) -> ProtectedServer:
    protected = ProtectedServer(world)
    protected.install()
    return protected


def _grant(wall: FakeWall, *, lifetime: float = 3600, **overrides: Any) -> Grant:
    values: dict[str, Any] = {
        "access_token": "stored-access",
        "issuer": ISSUER,
        "token_endpoint": TOKEN,
        "resource": URL,
        "client": ClientRegistration(ISSUER, "cid", "csecret", "client_secret_post"),
        "expires_at": wall.now + lifetime,
        "refresh_token": "stored-refresh",
        "scopes": ("tools",),
    }
    values.update(overrides)
    return Grant(**values)


def _call(
    world: World, wall: FakeWall, store: MemoryGrantStore, config: ClientConfig | None = None, budget=20
):
    settings = OAuthSettings(config or ClientConfig(), store)
    endpoint = Endpoint(identifier="demo", url=URL, budget_seconds=budget, oauth=settings)
    client = McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=world.clock, wall=wall
    )
    return client.call_tool(endpoint, "echo", {})


def _legs(world: World) -> list[str]:
    return [s.url.replace("http://192.0.2.1", "").replace(ISSUER, "AS") for s in world.sent]


MCP_LEGS = ["/mcp"] * 4  # initialize, notifications/initialized, tools/call, DELETE


def test_a_valid_token_adds_no_leg(world: World, wall: FakeWall, server: ProtectedServer) -> None:
    """A fresh stored token: the call's legs are the MCP legs alone, each with the token."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    server.valid.add("stored-access")
    assert _call(world, wall, store).text == "ok"
    assert _legs(world) == MCP_LEGS
    assert all(s.headers["Authorization"] == "Bearer stored-access" for s in world.sent)


def test_a_server_echoing_the_access_token_does_not_hand_it_to_the_model(world, wall, server) -> None:
    """The tool's answer quotes the bearer it was sent: the outcome masks it (the Django side
    masks a configured credential; only the client knows the operation's access token)."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    server.valid.add("stored-access")
    server.mcp.call_result = {"content": [{"type": "text", "text": "you sent stored-access, thanks"}]}
    text = _call(world, wall, store).text
    assert "stored-access" not in text and "you sent [credential], thanks" in text


def test_an_expired_token_is_refreshed_before_the_first_mcp_leg(world, wall, server) -> None:
    """One extra leg, the refresh, comes first; every MCP leg then carries the new token."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=-5))
    world.serve_token_endpoint()
    server.valid.add("access-1")
    assert _call(world, wall, store).text == "ok"
    assert _legs(world) == ["AS/token", *MCP_LEGS] and server.refused == 0


def test_a_401_mid_operation_refreshes_once_and_retries(world, wall, server) -> None:
    """The stored token was revoked: 401, the metadata check, one refresh, the retried leg succeeds."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    world.serve_token_endpoint()
    server.valid.add("access-1")
    assert _call(world, wall, store).text == "ok"
    assert _legs(world) == ["/mcp", "/.well-known/oauth-protected-resource/mcp", "AS/token", *MCP_LEGS]


def test_a_second_401_needs_a_person(world, wall, server) -> None:
    """The refreshed token is refused too: authorization_required, no second refresh."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall))
    world.serve_token_endpoint()
    with pytest.raises(AuthorizationError) as caught:
        _call(world, wall, store)
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "refresh_refused")
    assert _legs(world).count("AS/token") == 1


def test_never_authorized_costs_one_mcp_leg_and_names_the_scopes(world, wall, server) -> None:
    """Authorization code, no grant: one unauthenticated leg, then authorization_required with the
    challenge's scopes and metadata URL for the operator's Connect; no OAuth leg."""
    with pytest.raises(AuthorizationError) as caught:
        _call(world, wall, MemoryGrantStore())
    error = caught.value
    assert (error.reason, error.scopes, error.resource_metadata) == ("not_authorized", ("tools",), PRM)
    assert _legs(world) == ["/mcp"]


def test_a_ping_whose_refresh_is_refused_reports_authorization_required_and_its_reason(
    world, wall, server
) -> None:
    """ping never raises: the refused refresh (invalid_grant) is a report of kind
    authorization_required whose failure names the reason (no scopes to add); no MCP leg."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=-5))
    world.serve_token_endpoint()
    world.token_answers.append((400, {"error": "invalid_grant"}))
    endpoint = Endpoint(identifier="demo", url=URL, oauth=OAuthSettings(ClientConfig(), store))
    report = McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=world.clock, wall=wall
    ).ping(endpoint)
    assert (report.reachable, report.error_kind) == (False, "authorization_required")
    failure = report.failure
    assert isinstance(failure, AuthorizationError)
    assert (failure.reason, failure.scopes) == ("refresh_refused", ())
    assert "stored-refresh" not in report.error and "stored-refresh" not in repr(report)
    assert _legs(world) == ["AS/token"]


def test_first_client_credentials_authorization(world, wall, server) -> None:
    """Client credentials from nothing: 401, PRM, AS metadata, token, then the MCP legs; the secret
    goes to the token endpoint only and the token to the MCP URL only."""
    world.serve_token_endpoint()
    server.valid.add("access-1")
    config = ClientConfig(grant="client_credentials", client_id="svc", client_secret="s3cret", issuer=ISSUER)
    store = MemoryGrantStore()
    assert _call(world, wall, store, config).text == "ok"
    assert _legs(world) == [
        "/mcp",
        "/.well-known/oauth-protected-resource/mcp",
        "AS/.well-known/oauth-authorization-server",
        "AS/token",
        *MCP_LEGS,
    ]
    for sent in world.sent:
        authorization = sent.headers.get("Authorization", "")
        assert ("s3cret" in str(sent.form) or authorization.startswith("Basic")) == (sent.url == TOKEN)
        assert ("access-1" in authorization) == (sent.url == URL and sent is not world.sent[0])
    saved = store.load("demo")
    assert saved is not None and saved.scopes == ("tools",)


def test_a_refresh_that_does_not_fit_the_budget_is_not_sent(world, wall, server) -> None:
    """The refresh is a leg of the operation: with the budget spent by the host lookup's
    grant and a slow refresh, no MCP leg follows; the operation ends on its budget."""
    store = MemoryGrantStore()
    store.save("demo", _grant(wall, lifetime=-5))
    world.serve_token_endpoint()
    world.seconds_per_leg = 1.5
    server.valid.add("access-1")
    with pytest.raises(McpTransportError) as caught:
        _call(world, wall, store, budget=1)
    assert caught.value.kind == "deadline_exhausted"
    assert _legs(world) == ["AS/token"]
