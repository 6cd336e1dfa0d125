"""A refresh cut by its caller's budget does not spend the grant (issue 25, item 11).

Against django-oauth-toolkit (tests/oauth_peers.py), which rotates refresh tokens and refuses a
spent one (``invalid_grant``), with its token endpoint's answers held back by a proxy
(tests/peers/slow_answers.py): the toolkit rotates the token at once, the client reads that it
did only 3 s later. An operation with 1.5 s of budget used to be cut off with the rotated token
unread: nothing was kept, and the next operation presented the spent token and lost the grant.
Now the caller ends ``deadline_exhausted`` on time, the refresh goes on, its answer is kept, and
the next operation uses it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.test import override_settings

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.oauth import ClientConfig, Grant, GrantStore, MemoryGrantStore, OAuthSettings
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.servers.endpoints import endpoint_for
from tests.authorization.helpers import SETTINGS, oauth_server
from tests.oauth_peers import OAuthPeers
from tests.peers.slow_answers import SlowAnswers

BUDGET = 1.5
ANSWER_DELAY = 3.0
KEPT_WITHIN = 15.0

pytestmark = pytest.mark.e2e


@pytest.fixture
def slow_token_endpoint(oauth_peers: OAuthPeers) -> Iterator[str]:
    """The authorization server's token endpoint, its answers 3 s late."""
    with SlowAnswers(urlsplit(oauth_peers.auth.issuer).port or 80, ANSWER_DELAY) as proxy:
        yield f"http://127.0.0.1:{proxy.port}/token/"


def _expired_grant(peers: OAuthPeers, token_endpoint: str) -> Grant:
    """A real grant of the public client, its access token taken as expired, refreshed through the proxy."""
    tokens = peers.auth.authorization_code_tokens(peers.auth.public_client, resource=peers.mcp.url)
    client = ClientRegistration(peers.auth.issuer, peers.auth.public_client.client_id, None, "none")
    return Grant(
        access_token=tokens["access_token"],
        refresh_token=tokens["refresh_token"],
        issuer=peers.auth.issuer,
        token_endpoint=token_endpoint,
        resource=peers.mcp.url,
        client=client,
        expires_at=time.time() - 60,
        scopes=("mcp:tools",),
        mcp_url=peers.mcp.url,
    )


def _cut_refresh_is_kept(peers: OAuthPeers, store: GrantStore, server: str, endpoint: Endpoint) -> None:
    stale = store.load(server)
    assert stale is not None and stale.refresh_token is not None
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    before = peers.auth.token_requests("refresh_token")
    started = time.monotonic()
    with pytest.raises(McpTransportError) as cut:
        client.call_tool(dataclasses.replace(endpoint, budget_seconds=BUDGET), "echo", {"text": "cut"})
    assert time.monotonic() - started < BUDGET + 1
    assert cut.value.kind == "deadline_exhausted", cut.value
    assert "renewal goes on" in str(cut.value) and stale.refresh_token not in str(cut.value)

    ends = time.monotonic() + KEPT_WITHIN
    while (kept := store.load(server)) is not None and kept.refresh_token == stale.refresh_token:
        assert time.monotonic() < ends, "the refresh's answer was never kept"
        time.sleep(0.1)
    assert kept is not None and kept.access_token != stale.access_token

    answer = client.call_tool(dataclasses.replace(endpoint, budget_seconds=10), "echo", {"text": "next"})
    assert (answer.is_error, answer.text) == (False, "next")
    assert peers.auth.token_requests("refresh_token") == before + 1  # the rotated grant lives on


def test_a_refresh_cut_by_the_budget_is_kept_for_the_next_operation(
    oauth_peers: OAuthPeers, slow_token_endpoint: str
) -> None:
    """In memory: the caller gets deadline_exhausted within its budget; the refresh, sent, is
    answered and kept; the next operation uses the rotated grant, with no second refresh."""
    store = MemoryGrantStore()
    store.save("protected", _expired_grant(oauth_peers, slow_token_endpoint))
    endpoint = Endpoint(
        identifier="protected", url=oauth_peers.mcp.url, oauth=OAuthSettings(ClientConfig(), store)
    )
    _cut_refresh_is_kept(oauth_peers, store, "protected", endpoint)


@pytest.mark.django_db(transaction=True)
def test_a_refresh_cut_by_the_budget_is_kept_in_the_database(
    oauth_peers: OAuthPeers, slow_token_endpoint: str
) -> None:
    """The app's store: the refresh thread takes the lock, saves and commits the rotated grant
    after its caller has gone, and the next operation reads it back."""
    with override_settings(**SETTINGS):
        server = oauth_server(oauth_peers)
        store = DatabaseGrantStore()
        store.save(server.identifier, _expired_grant(oauth_peers, slow_token_endpoint))
        _cut_refresh_is_kept(oauth_peers, store, server.identifier, endpoint_for(server))
