"""OAuth over TLS by name: django-oauth-toolkit under gunicorn at https://auth.test:PORT and the
SDK's protected MCP server at https://mcp.test:PORT/mcp, each with a certificate for its name
only (tests/oauth_peers.py ``tls=``). The client reaches both through its resolver seam and
its CA bundle, the OAuth legs on the same leg machine as the MCP legs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import (
    ClientConfig,
    MemoryGrantStore,
    OAuthLegs,
    OAuthSettings,
)
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import McpTransportError
from tests.oauth_peers import OAuthPeers, connect_on_legs, start_oauth_peers
from tests.tls import TestAuthority, log_entries, names_session, peer_log, resolve_test_names, tls_adversary

pytestmark = pytest.mark.e2e

REDIRECT = "http://127.0.0.1:9/callback"  # loopback: the toolkit accepts any port, never visited


@pytest.fixture(scope="module")
def tls_peers(tls: TestAuthority) -> Iterator[OAuthPeers]:
    with start_oauth_peers(tls=tls) as peers:
        yield peers


def _client(tls: TestAuthority) -> McpClient:
    return McpClient(
        connection=ConnectionSettings(
            allow_private_networks=True, resolver=resolve_test_names, ca_bundle=str(tls.bundle)
        )
    )


def _whoami(tls: TestAuthority, peers: OAuthPeers, settings: OAuthSettings) -> dict[str, object]:
    endpoint = Endpoint(identifier="peer", url=peers.mcp.url, oauth=settings)
    outcome = _client(tls).call_tool(endpoint, "whoami")
    assert not outcome.is_error, outcome.text
    who: dict[str, object] = json.loads(outcome.text)
    return who


def _names_only(seen: list[str | None], name: str) -> None:
    assert seen and set(seen) == {name}, seen


def test_client_credentials_by_name_over_tls(tls: TestAuthority, tls_peers: OAuthPeers) -> None:
    """No grant yet: the MCP server's 401 leads to its metadata, the authorization server's
    metadata and a client-credentials token, all over https by name; the call then succeeds.
    Every handshake at either server named it (SNI)."""
    auth = tls_peers.auth
    assert auth.issuer.startswith("https://auth.test:") and tls_peers.mcp.url.startswith("https://mcp.test:")
    machine = auth.machine_client
    before = auth.token_requests("client_credentials")
    config = ClientConfig(
        grant="client_credentials",
        client_id=machine.client_id,
        client_secret=machine.client_secret,
        issuer=auth.issuer,
    )
    who = _whoami(tls, tls_peers, OAuthSettings(config, MemoryGrantStore()))
    assert who["client_id"] == machine.client_id and who["resource"] == tls_peers.mcp.url
    assert auth.token_requests("client_credentials") == before + 1
    _names_only(auth.server_names_seen(), "auth.test")
    _names_only(peer_log(tls_peers.mcp.url, tls, "/sni"), "mcp.test")


def test_an_expired_token_is_refreshed_by_name_over_tls(tls: TestAuthority, tls_peers: OAuthPeers) -> None:
    """A grant from the authorization code flow (discovery and registration over the client's
    OAuth legs, the consent in a browser session by name); its access token expired: the
    operation refreshes it at https://auth.test and calls https://mcp.test with the new one."""
    auth, mcp = tls_peers.auth, tls_peers.mcp
    config = ClientConfig(redirect_uri=REDIRECT)
    store = MemoryGrantStore()
    deadline = OperationDeadline(30, MonotonicClock(), "peer")
    legs = OAuthLegs(
        "peer",
        deadline,
        ConnectionSettings(
            allow_private_networks=True, resolver=resolve_test_names, ca_bundle=str(tls.bundle)
        ),
    )
    with legs, names_session(tls) as browser:
        grant, _ = connect_on_legs(legs, tls_peers, config, store, browser=browser)
    assert grant.refresh_token and grant.token_endpoint.startswith("https://auth.test:")
    store.save("peer", replace(grant, expires_at=0.0))
    before = auth.token_requests("refresh_token")
    who = _whoami(tls, tls_peers, OAuthSettings(config, store))
    assert who["subject"] == auth.username and who["resource"] == mcp.url
    assert auth.token_requests("refresh_token") == before + 1
    renewed = store.load("peer")
    assert renewed is not None and renewed.access_token != grant.access_token
    _names_only(auth.server_names_seen(), "auth.test")


def test_an_authorization_server_with_a_certificate_for_another_name_gets_no_request(
    tls: TestAuthority,
) -> None:
    """An OAuth leg meets a certificate for another name: ``tls`` naming the server and the
    endpoint's role (never its URL), and the peer received SNI for the name but no request."""
    with tls_adversary(tls.issue("other.test")) as (port, log):
        legs = OAuthLegs(
            "peer",
            OperationDeadline(10, MonotonicClock(), "peer"),
            ConnectionSettings(
                allow_private_networks=True, resolver=resolve_test_names, ca_bundle=str(tls.bundle)
            ),
        )
        with legs, pytest.raises(McpTransportError) as caught:
            legs.post_form(
                f"https://auth.test:{port}/token?k=hunter2", "token endpoint", {"grant_type": "x"}, {}
            )
        seen = log_entries(log)
    assert caught.value.kind == "tls" and caught.value.__cause__ is None
    assert str(caught.value) == (
        "MCP server 'peer': its token endpoint presented a TLS certificate that is not valid for auth.test."
    )
    assert {"sni": "auth.test"} in seen and not [entry for entry in seen if "request" in entry]
