"""nr_llm.mcp.oauth against real peers: django-oauth-toolkit as the authorization server and
the official SDK's MCP server checking tokens by introspection (tests/peers/README.md).

Everything the flow needs is discovered from the MCP server's own 401; the operator's
browser is ``approve`` (log in, consent, the redirect's Location read, never followed).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from nr_llm.mcp import ConnectionSettings
from nr_llm.mcp.oauth import (
    ClientConfig,
    Grant,
    MemoryGrantStore,
    OAuthLegs,
    OAuthSettings,
    OperationTokens,
    SystemWallClock,
    client_credentials,
    refresh,
)
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import AuthorizationError
from tests.oauth_peers import connect_on_legs, mcp_request

pytestmark = pytest.mark.e2e

REDIRECT = "http://127.0.0.1:9/callback"  # loopback: the toolkit accepts any port, never visited


def _legs(budget: float = 30) -> OAuthLegs:
    return OAuthLegs(
        "peer",
        OperationDeadline(budget, MonotonicClock(), "peer"),
        ConnectionSettings(allow_private_networks=True),
    )


def _connect(oauth_peers, config: ClientConfig, store: MemoryGrantStore) -> tuple[Grant, str]:
    """The operator's Connect: probe, start, the browser's round trip, finish."""
    with _legs() as legs:
        grant, url = connect_on_legs(legs, oauth_peers, config, store)
    store.save("peer", grant)
    return grant, url


def _whoami(oauth_peers, token: str) -> Any:
    answer = mcp_request(oauth_peers.mcp.url, "tools/call", {"name": "whoami", "arguments": {}}, token=token)
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["structuredContent"]


def test_discover_register_authorize_and_call(oauth_peers) -> None:
    """From the 401 alone: PRM, AS metadata, dynamic registration, PKCE with resource and state,
    the iss-checked callback, a code exchange; the token works at the MCP server and is bound to it."""
    auth, mcp = oauth_peers.auth, oauth_peers.mcp
    registrations = len(auth.requests_seen("register"))
    grant, url = _connect(oauth_peers, ClientConfig(redirect_uri=REDIRECT), MemoryGrantStore())
    query = parse_qs(urlsplit(url).query)
    assert query["resource"] == [mcp.url] and query["code_challenge_method"] == ["S256"]
    assert query["scope"][0].split() == ["mcp:tools", "offline_access"]  # PRM scopes + offline_access
    assert len(auth.requests_seen("register")) == registrations + 1
    assert grant.issuer == auth.issuer and grant.refresh_token and grant.expires_at
    who = _whoami(oauth_peers, grant.access_token)
    assert who["subject"] == auth.username and who["resource"] == mcp.url


def test_refresh_rotates_at_the_real_authorization_server(oauth_peers) -> None:
    """One refresh request; the rotated refresh token replaces the old one and the new access token works."""
    auth = oauth_peers.auth
    config = ClientConfig(redirect_uri=REDIRECT)
    grant, _ = _connect(oauth_peers, config, MemoryGrantStore())
    before = auth.token_requests("refresh_token")
    with _legs() as legs:
        renewed = refresh(legs, grant, config, SystemWallClock())
    assert auth.token_requests("refresh_token") == before + 1
    assert renewed.refresh_token not in (None, grant.refresh_token)
    assert _whoami(oauth_peers, renewed.access_token)["subject"] == auth.username


def test_a_reused_refresh_token_needs_a_person(oauth_peers) -> None:
    """The toolkit refuses a spent refresh token (reuse detection): authorization_required/refresh_refused."""
    config = ClientConfig(redirect_uri=REDIRECT)
    grant, _ = _connect(oauth_peers, config, MemoryGrantStore())
    with _legs() as legs:
        refresh(legs, grant, config, SystemWallClock())
        with pytest.raises(AuthorizationError) as caught:
            refresh(legs, grant, config, SystemWallClock())
    assert (caught.value.kind, caught.value.reason) == ("authorization_required", "refresh_refused")


def test_client_credentials_with_a_pre_registered_secret(oauth_peers) -> None:
    """The machine client gets a resource-bound token with no person involved."""
    machine = oauth_peers.auth.machine_client
    config = ClientConfig(
        grant="client_credentials",
        client_id=machine.client_id,
        client_secret=machine.client_secret,
        issuer=oauth_peers.auth.issuer,
    )
    with _legs() as legs:
        grant = client_credentials(legs, oauth_peers.mcp.url, config, MemoryGrantStore(), SystemWallClock())
    who = _whoami(oauth_peers, grant.access_token)
    assert who["client_id"] == machine.client_id and who["resource"] == oauth_peers.mcp.url


def test_expired_tokens_in_four_threads_cost_one_refresh_request(oauth_peers) -> None:
    """Four operations find the token expired at once: exactly one refresh request reaches the
    authorization server, and all four get a token the MCP server accepts."""
    auth = oauth_peers.auth
    config = ClientConfig(redirect_uri=REDIRECT)
    store = MemoryGrantStore()
    grant, _ = _connect(oauth_peers, config, store)
    store.save("peer", replace(grant, expires_at=0.0))
    before = auth.token_requests("refresh_token")
    tokens: list[str | None] = []

    def operation() -> None:
        deadline = OperationDeadline(30, MonotonicClock(), "peer")
        source = OperationTokens(
            "peer",
            oauth_peers.mcp.url,
            OAuthSettings(config, store),
            deadline,
            ConnectionSettings(allow_private_networks=True),
        )
        try:
            tokens.append(source.bearer())
        finally:
            source.close()

    threads = [threading.Thread(target=operation) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert auth.token_requests("refresh_token") == before + 1
    assert len(tokens) == 4 and len(set(tokens)) == 1 and tokens[0] != grant.access_token
    assert _whoami(oauth_peers, tokens[0] or "")["subject"] == auth.username
