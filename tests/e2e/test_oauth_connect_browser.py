"""An operator connects an OAuth-protected MCP server from the admin in real Chromium.

The site runs on pytest-django's live server; the authorization server is
django-oauth-toolkit and the MCP server the SDK's (tests/peers/README.md), all on
127.0.0.1. Screenshots go to test-artifacts/ and, for the operator guide, docs/img/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.models import McpServer
from tests.e2e.chromium import chromium_page
from tests.e2e.test_admin_browser import HEIGHT, WIDTH, _assert_changelist_fits
from tests.oauth_peers import OAuthPeers, mcp_request
from tests.peers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ARTIFACTS = ROOT / "test-artifacts"
DOCS_IMG = ROOT / "docs" / "img"


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium_page(tmp_path / "chromium-profile", width=WIDTH, height=HEIGHT) as page:
        try:
            yield page
        finally:
            connections.close_all()


def test_operator_connects_sees_connected_in_the_changelist_and_disconnects(
    live_server, admin_user, browser_page, settings, oauth_peers: OAuthPeers
) -> None:
    """Connect → the toolkit's login and consent → back on the server page "Connected"; the token
    works at the MCP server; the changelist shows each state and fits 1280x800; Disconnect."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    settings.NR_LLM_PUBLIC_BASE_URL = live_server.url
    ARTIFACTS.mkdir(exist_ok=True)
    server = McpServer.objects.create(
        identifier="protected",
        name="Protected peer",
        url=oauth_peers.mcp.url,
        auth_placement="oauth",
        enabled=True,
        data_class="publicContent",
    )
    page = browser_page
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#user-tools")

    # Not connected yet: flagged, and found by the "needs attention" filter.
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/?authorization=attention")
    cell = page.locator("tr:has-text('Protected peer') td.field-contact_column")
    assert "needs reconnect: not connected yet" in cell.inner_text()
    _assert_changelist_fits(page)

    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/{server.pk}/change/")
    assert (
        f"{live_server.url}/admin/nr_llm/mcpserver/oauth/callback/"
        in page.locator(".field-oauth_status").inner_text()
    )
    page.get_by_role("button", name="Connect", exact=True).click()

    # The authorization server's own pages.
    page.wait_for_selector("#id_username")
    assert page.url.startswith(oauth_peers.auth.issuer)
    page.fill("#id_username", oauth_peers.auth.username)
    page.fill("#id_password", oauth_peers.auth.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#authorizationForm")
    page.screenshot(path=str(ARTIFACTS / "oauth-consent.png"))
    page.get_by_role("button", name="Authorize").click()

    page.wait_for_selector("ul.messagelist")
    assert page.url.startswith(live_server.url)
    message = page.locator("ul.messagelist").inner_text()
    assert "Connected protected: scopes mcp:tools" in message, message
    assert "connected until" in page.locator(".field-oauth_status").inner_text()
    page.screenshot(path=str(ARTIFACTS / "admin-oauth-connected.png"), full_page=True)
    # The message and the OAuth section, for the operator guide.
    page.locator("ul.messagelist").screenshot(path=str(DOCS_IMG / "admin-oauth-connected-message.png"))
    page.locator("fieldset:has(.field-oauth_status)").screenshot(
        path=str(DOCS_IMG / "admin-oauth-connected.png")
    )

    grant = DatabaseGrantStore().load("protected")
    assert grant is not None
    assert mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token).status_code == 200
    assert grant.access_token not in page.content()

    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/")
    cell = page.locator("tr:has-text('Protected peer') td.field-contact_column")
    assert "OAuth 2.1: connected until" in cell.inner_text()
    _assert_changelist_fits(page)
    page.screenshot(path=str(DOCS_IMG / "admin-oauth-changelist.png"))

    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/{server.pk}/change/")
    page.get_by_role("button", name="Disconnect").click()
    page.wait_for_selector("ul.messagelist")
    assert (
        "Disconnected protected: tokens revoked and forgotten." in page.locator("ul.messagelist").inner_text()
    )
    assert DatabaseGrantStore().load("protected") is None
    assert mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token).status_code == 401
