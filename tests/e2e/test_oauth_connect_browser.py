"""An operator connects an OAuth-protected MCP server from the admin in real Chromium.

The site runs on pytest-django's live server; the authorization server is
django-oauth-toolkit and the MCP server the SDK's (tests/peers/README.md), all on
127.0.0.1. Screenshots go to test-artifacts/; with NR_LLM_DOC_IMAGES=1 the operator guide's
go to docs/img/ instead (a plain test run leaves tracked files as they are).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp.oauth import Grant
from nr_llm.models import McpServer, McpTool
from tests.e2e.chromium import chromium_page
from tests.e2e.test_admin_browser import HEIGHT, WIDTH, _assert_changelist_fits, _on_screen, _run_action
from tests.oauth_peers import OAuthPeers, mcp_request, start_oauth_peers
from tests.peers import ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

ARTIFACTS = ROOT / "test-artifacts"
DOCS_IMG = ROOT / "docs" / "img" if os.environ.get("NR_LLM_DOC_IMAGES") == "1" else ARTIFACTS
# Shorter than the client's 30 s refresh skew, so every operation renews the grant first; short
# enough that the test can wait for a real expiry, long enough for one operation's legs.
SHORT_TOKEN_SECONDS = 4


@pytest.fixture
def browser_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with chromium_page(tmp_path / "chromium-profile", width=WIDTH, height=HEIGHT) as page:
        try:
            yield page
        finally:
            connections.close_all()


@pytest.fixture
def short_lived_peers() -> Iterator[OAuthPeers]:
    """A pair of its own whose access tokens live SHORT_TOKEN_SECONDS."""
    with start_oauth_peers(access_token_seconds=SHORT_TOKEN_SECONDS) as peers:
        yield peers


def _protected_server(peers: OAuthPeers) -> McpServer:
    return McpServer.objects.create(
        identifier="protected",
        name="Protected peer",
        url=peers.mcp.url,
        auth_placement="oauth",
        enabled=True,
        data_class="publicContent",
        requires_approval=False,
    )


def _log_in(page, live_server) -> None:
    page.goto(f"{live_server.url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_selector("#user-tools")


def _connect(page, live_server, peers: OAuthPeers) -> None:
    """From the server's change page: Connect, the toolkit's login and consent, back "Connected"."""
    page.get_by_role("button", name="Connect", exact=True).click()
    # The authorization server's own pages.
    page.wait_for_selector("#id_username")
    assert page.url.startswith(peers.auth.issuer)
    page.fill("#id_username", peers.auth.username)
    page.fill("#id_password", peers.auth.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#authorizationForm")
    page.screenshot(path=str(ARTIFACTS / "oauth-consent.png"))
    page.get_by_role("button", name="Authorize").click()

    page.wait_for_selector("ul.messagelist")
    assert page.url.startswith(live_server.url)
    message = page.locator("ul.messagelist").inner_text()
    assert "Connected protected: scopes mcp:tools" in message, message
    assert "connected until" in page.locator(".field-oauth_status").inner_text()


def _contact_cell(page, live_server) -> str:
    """The protected server's connection line in the changelist (which must fit 1280x800)."""
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/")
    _assert_changelist_fits(page)
    return str(page.locator("tr:has-text('Protected peer') td.field-contact_column").inner_text())


def _disconnect(page, live_server, server: McpServer) -> None:
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/{server.pk}/change/")
    page.get_by_role("button", name="Disconnect").click()
    page.wait_for_selector("ul.messagelist")
    assert (
        "Disconnected protected: tokens revoked and forgotten." in page.locator("ul.messagelist").inner_text()
    )
    assert DatabaseGrantStore().load("protected") is None


def _run_tool(page, text: str) -> float:
    """On a Try page: run echo with ``text``, see it answered within its budget; the seconds taken."""
    page.fill("#id_arguments", f'{{"text": "{text}"}}')
    page.get_by_role("button", name="Run tool").click()
    page.wait_for_selector("#try-tool-result")
    assert page.locator("#try-tool-outcome").inner_text() == "The tool answered"
    assert page.locator("#try-tool-text").inner_text() == text
    elapsed = re.fullmatch(
        r"Elapsed (\d+\.\d\d) s of the (\d+) s budget", page.locator("#try-tool-elapsed").inner_text()
    )
    assert elapsed is not None
    return float(elapsed[1])  # a call cut at its budget would not have "answered"


def _expired_grant(server: str, limit_seconds: float) -> Grant:
    """The stored grant once its access token has expired by the wall clock (polled, bounded)."""
    deadline = time.monotonic() + limit_seconds
    while True:
        grant = DatabaseGrantStore().load(server)
        assert grant is not None and grant.expires_at is not None
        if grant.expires_at <= time.time():
            return grant
        assert time.monotonic() < deadline, f"the access token did not expire within {limit_seconds} s"
        time.sleep(min(0.2, max(grant.expires_at - time.time(), 0.01)))


def test_operator_connects_sees_connected_in_the_changelist_and_disconnects(
    live_server, admin_user, browser_page, settings, oauth_peers: OAuthPeers
) -> None:
    """Connect → the toolkit's login and consent → back on the server page "Connected"; the token
    works at the MCP server; the changelist shows each state and fits 1280x800; Disconnect."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    settings.NR_LLM_PUBLIC_BASE_URL = live_server.url
    ARTIFACTS.mkdir(exist_ok=True)
    server = _protected_server(oauth_peers)
    page = browser_page
    _log_in(page, live_server)

    # Not connected yet: flagged, and found by the "needs attention" filter.
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/?authorization=attention")
    cell = page.locator("tr:has-text('Protected peer') td.field-contact_column")
    assert "OAuth 2.1: not connected yet" in cell.inner_text()
    assert "needs reconnect" not in cell.inner_text()
    _assert_changelist_fits(page)

    # The server's page at 1280x800: its state and Connect at the top, no scrolling; no
    # Disconnect before there is a connection; none of the other authentications' fields.
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/{server.pk}/change/")
    status = page.locator(".field-oauth_status .readonly").inner_text()
    assert status.startswith("not connected yet"), status
    assert f"{live_server.url}/admin/nr_llm/mcpserver/oauth/callback/" in status
    page.wait_for_load_state("load")  # the page's script has chosen the fields to show
    assert _on_screen(page, ".field-oauth_status button[formaction$='/oauth/connect/']")
    assert page.get_by_role("button", name="Disconnect").count() == 0
    for button in ("Test connection", "Import catalogue"):
        assert page.get_by_role("button", name=button).is_visible(), button
    for field in ("#id_new_credential", "#id_auth_header_name", "#id_credential_env"):
        assert not page.locator(field).is_visible(), field
    assert page.locator("#id_oauth_registration").is_visible()
    page.screenshot(path=str(DOCS_IMG / "admin-oauth-server-page.png"))
    _connect(page, live_server, oauth_peers)
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

    assert "OAuth 2.1: connected until" in _contact_cell(page, live_server)
    page.screenshot(path=str(DOCS_IMG / "admin-oauth-changelist.png"))

    _disconnect(page, live_server, server)
    assert mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token).status_code == 401


def test_operator_tries_a_protected_tool_and_after_expiry_the_next_try_refreshes_once(
    live_server, admin_user, browser_page, settings, short_lived_peers: OAuthPeers
) -> None:
    """Connect; import the protected catalogue and enable echo in the browser; Try it: it answers.
    Wait (polling the stored grant) until the access token has expired, Try again: it answers
    within the budget after exactly one refresh, and the stored refresh token rotated. Disconnect.
    The changelist reads connected, still connected (renewed), then needs reconnect."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    settings.NR_LLM_PUBLIC_BASE_URL = live_server.url
    ARTIFACTS.mkdir(exist_ok=True)
    peers = short_lived_peers
    server = _protected_server(peers)
    page = browser_page
    _log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/nr_llm/mcpserver/{server.pk}/change/")
    _connect(page, live_server, peers)
    connected = _contact_cell(page, live_server)
    assert "OAuth 2.1: connected until" in connected and "renews itself" in connected, connected

    # Import the protected catalogue through the admin action, as an operator would.
    page.locator("tr:has-text('Protected peer') input.action-select").check()
    message = _run_action(page, "Import catalogue")
    assert re.search(r"Import of protected ran: [1-9]\d* imported, 0 skipped, 0 orphaned\.", message), message
    echo = McpTool.objects.get(server=server, remote_name="echo")
    page.locator("tr:has-text('Protected peer') td.field-catalogue_column a").click()
    page.locator(f"tr:has-text('{echo.tool_name}') input.action-select").check()
    assert "1 tool(s) enabled." in _run_action(page, "Enable selected tools")
    page.locator(f"tr:has-text('{echo.tool_name}')").get_by_role("link", name="Try tool").click()
    try_url = page.url
    _run_tool(page, "hello through OAuth")
    page.screenshot(path=str(ARTIFACTS / "admin-oauth-try-tool.png"), full_page=True)
    page.locator("#content").screenshot(path=str(DOCS_IMG / "admin-oauth-try-tool.png"))

    # The next call after a real expiry: one refresh, within the budget, the refresh token rotated.
    expired = _expired_grant("protected", SHORT_TOKEN_SECONDS + 10)
    refreshes = peers.auth.token_requests("refresh_token")
    page.goto(try_url)
    _run_tool(page, "after the token expired")
    assert peers.auth.token_requests("refresh_token") == refreshes + 1
    renewed = DatabaseGrantStore().load("protected")
    assert renewed is not None and renewed.refresh_token is not None and expired.refresh_token is not None
    assert renewed.refresh_token != expired.refresh_token
    assert renewed.access_token != expired.access_token
    assert renewed.expires_at is not None and expired.expires_at is not None
    assert renewed.expires_at > expired.expires_at
    html = page.content()
    for secret in (expired.access_token, expired.refresh_token, renewed.access_token, renewed.refresh_token):
        assert secret not in html
    still = _contact_cell(page, live_server)
    assert "OAuth 2.1: connected until" in still and "needs reconnect" not in still, still

    _disconnect(page, live_server, server)
    assert "OAuth 2.1: not connected yet" in _contact_cell(page, live_server)
