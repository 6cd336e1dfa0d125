"""Two users of the site each connect their own account of a per-user server, in real Chromium
(one after the other at the same browser, every cookie cleared in between).

The site runs on pytest-django's live server, the authorization server is django-oauth-toolkit
(with two people: its "operator" and "member") and the MCP server the SDK's, all on 127.0.0.1.
The server's whoami tool says whom each call acts for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from nr_llm.authorization.actors import NeedsAuthorization, resolve
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp import Endpoint
from nr_llm.models import McpServer, UserGrantRecord
from nr_llm.servers.endpoints import mcp_client
from tests.e2e.chromium import chromium_page
from tests.oauth_peers import OAuthPeers
from tests.peers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium_page(tmp_path / "chromium-profile") as page:
        try:
            yield page
        finally:
            connections.close_all()


def _signed_in(page: Any, site: str, user: User) -> None:
    """The site's own login is the site's business: the session cookie stands in for it. Every
    cookie (this site's and the authorization server's) goes first: a new person at the keyboard."""
    page.context.clear_cookies()
    client = Client()
    client.force_login(user)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": site}])


def _at_the_authorization_server(page: Any, peers: OAuthPeers, username: str, password: str) -> None:
    page.wait_for_selector("#id_username")
    assert page.url.startswith(peers.auth.issuer)
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#authorizationForm")
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_selector("ul.messages")


def _whoami(server: McpServer, user: User) -> str:
    endpoint = resolve(server, user)
    assert isinstance(endpoint, Endpoint), endpoint
    outcome = mcp_client().call_tool(endpoint, "whoami", {})
    assert not outcome.is_error and outcome.structured is not None, outcome.text
    return str(outcome.structured["subject"])


def test_two_users_connect_their_own_accounts_and_each_call_acts_as_its_user(
    live_server, browser_page, settings, oauth_peers: OAuthPeers
) -> None:
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    settings.NR_LLM_PUBLIC_BASE_URL = live_server.url
    ARTIFACTS.mkdir(exist_ok=True)
    server = McpServer.objects.create(
        identifier="protected",
        name="Protected peer",
        url=oauth_peers.mcp.url,
        auth_placement="oauth",
        oauth_mode="per_user",
        enabled=True,
        data_class="publicContent",
        requires_approval=False,
    )
    alice = User.objects.create_user("alice", password="pw")
    bob = User.objects.create_user("bob", password="pw")
    alice_page = bob_page = browser_page
    accounts = f"{live_server.url}{reverse('nr_llm_connected_accounts')}"

    # Alice: from the connected accounts page, Connect, her login and consent, back "Connected".
    _signed_in(alice_page, live_server.url, alice)
    alice_page.goto(accounts)
    row = alice_page.locator("tr[data-server='protected']")
    assert "Not connected" in row.inner_text()
    row.get_by_role("link", name="Connect").click()
    _at_the_authorization_server(
        alice_page, oauth_peers, oauth_peers.auth.username, oauth_peers.auth.password
    )
    assert alice_page.url == accounts
    assert "Connected your account at Protected peer" in alice_page.locator("ul.messages").inner_text()
    assert "Connected since" in alice_page.locator("tr[data-server='protected']").inner_text()
    alice_page.screenshot(path=str(ARTIFACTS / "per-user-connected-accounts.png"))
    assert _whoami(server, alice) == oauth_peers.auth.username

    # Bob has no grant: his call is not sent, and the URL it hands him works in his browser.
    needs = resolve(server, bob)
    assert isinstance(needs, NeedsAuthorization) and needs.reason == "not_connected"
    _signed_in(bob_page, live_server.url, bob)
    bob_page.goto(needs.connect_url)
    _at_the_authorization_server(bob_page, oauth_peers, "member", oauth_peers.auth.other_users["member"])
    assert _whoami(server, bob) == "member"
    assert _whoami(server, alice) == oauth_peers.auth.username

    # No token on the page, of either user.
    bob_page.goto(accounts)
    for user in (alice, bob):
        grant = DatabaseGrantStore(user.pk).load("protected")
        assert grant is not None and grant.access_token not in bob_page.content()

    # Bob disconnects on his page: his grant is gone, Alice's stays.
    bob_page.goto(accounts)
    bob_page.get_by_role("button", name="Disconnect").click()
    bob_page.wait_for_selector("ul.messages")
    assert "Disconnected your account at Protected peer" in bob_page.locator("ul.messages").inner_text()
    assert not UserGrantRecord.objects.filter(user=bob).exists()
    assert isinstance(resolve(server, bob), NeedsAuthorization)
    assert _whoami(server, alice) == oauth_peers.auth.username

    # Alice's account is deleted: her grant goes with it.
    alice.delete()
    assert not UserGrantRecord.objects.exists()
