"""The MCP server's change page: the Connection panel on top, its buttons, the fields it shows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from nr_llm.models import DEFINITION_CHANGED, McpTool, OAuthGrantRecord

from . import catalogue_peers
from .admin_clients import messages_of, staff_client
from .factories import McpServerFactory, McpToolFactory

small_catalogue_url = catalogue_peers.small_catalogue_url
loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = pytest.mark.django_db


def _page(client, server) -> str:
    response = client.get(reverse("admin:nr_llm_mcpserver_change", args=[server.pk]))
    assert response.status_code == 200
    return str(response.content.decode())


def _fieldset(page: str, heading: str) -> str:
    """The opening tag of the fieldset headed ``heading`` (its classes say how it is shown)."""
    match = re.search(
        rf'(<fieldset class="[^"]*"[^>]*>)\s*(?:<details><summary>)?\s*<h2[^>]*>{heading}</h2>', page
    )
    assert match, heading
    return match.group(1)


def _button(page: str, label: str) -> str | None:
    """The formaction of the page's button labelled ``label``, or None when there is none."""
    match = re.search(
        rf'<button type="submit" class="button" formaction="([^"]+)" formnovalidate>{label}</button>', page
    )
    return match.group(1) if match else None


@pytest.mark.parametrize(
    ("placement", "shown", "folded"),
    [
        ("none", [], ["Credential", "OAuth 2.1"]),
        ("bearer", ["Credential"], ["OAuth 2.1"]),
        ("header", ["Credential"], ["OAuth 2.1"]),
        ("oauth", ["OAuth 2.1"], ["Credential"]),
    ],
)
def test_only_the_chosen_authentications_fields_are_unfolded(admin_client, placement, shown, folded):
    """The fieldsets of the other authentications are folded (the script hides them); each names
    the placements it serves, so the script can show it when the select changes."""
    server = McpServerFactory.create(auth_placement=placement, auth_header_name="X-Key")
    page = _page(admin_client, server)
    for heading in shown:
        assert "collapse" not in _fieldset(page, heading), heading
    for heading in folded:
        assert "collapse" in _fieldset(page, heading), heading
    assert "nr-llm-for-bearer nr-llm-for-header" in _fieldset(page, "Credential")
    assert "nr-llm-for-oauth" in _fieldset(page, "OAuth 2.1")
    assert 'src="/static/nr_llm/server_form.js"' in page


def test_the_connection_panel_comes_first_with_its_buttons(admin_client):
    """The first fieldset is Connection: last contact with Test connection, the catalogue with
    Import catalogue, each posting to the server's own URL."""
    server = McpServerFactory.create(identifier="docs")
    page = _page(admin_client, server)
    first = page.index("<fieldset")
    assert page.index(">Connection</h2>", first) < page.index("<fieldset", first + 1)
    assert _button(page, "Test connection") == reverse(
        "admin:nr_llm_mcpserver_test_connection", args=[server.pk]
    )
    assert _button(page, "Import catalogue") == reverse(
        "admin:nr_llm_mcpserver_import_catalogue", args=[server.pk]
    )
    assert "0 tools (not imported yet)" in page
    assert _button(page, "Connect") is None


def test_an_added_server_has_no_panel_yet(admin_client):
    """There is nothing to test or import before the server is saved."""
    page = admin_client.get(reverse("admin:nr_llm_mcpserver_add")).content.decode()
    assert ">Connection</h2>" not in page
    assert _button(page, "Test connection") is None


def test_oauth_server_shows_connect_first_and_disconnect_only_once_connected(admin_client):
    """Never connected: "not connected yet" (not "needs reconnect") and Connect, no Disconnect;
    with tokens stored, both."""
    server = McpServerFactory.create(identifier="hosted", auth_placement="oauth")
    page = _page(admin_client, server)
    panel = page[page.index(">Connection</h2>") : page.index("</fieldset>", page.index(">Connection</h2>"))]
    assert panel.index("field-oauth_status") < panel.index("field-contact_state")
    assert "not connected yet" in panel and "needs reconnect" not in panel
    assert _button(panel, "Connect") == reverse("admin:nr_llm_mcpserver_oauth_connect", args=[server.pk])
    assert _button(page, "Disconnect") is None

    OAuthGrantRecord.objects.create(
        server=server, access_token_ciphertext="x", expires_at=timezone.now() + timedelta(hours=1)
    )
    page = _page(admin_client, server)
    assert _button(page, "Disconnect") == reverse("admin:nr_llm_mcpserver_oauth_disconnect", args=[server.pk])


def test_the_catalogue_line_counts_tools_and_shows_the_whole_import_error(admin_client):
    """After an import the panel reads "enabled / total enabled" and the error in full, line breaks kept."""
    server = McpServerFactory.create(
        last_imported=timezone.now(), import_status="partial", import_error="a\nb"
    )
    McpToolFactory.create(server=server, enabled=True)
    McpToolFactory.create(server=server)
    page = _page(admin_client, server)
    assert "1 / 2 enabled" in page
    assert '<div class="nr-llm-detail nr-llm-error-text">a\nb</div>' in page


@pytest.mark.e2e
@pytest.mark.usefixtures("loopback_allowed")
def test_the_pages_buttons_run_the_same_services_as_the_actions(admin_client, small_catalogue_url):
    """Test connection and Import catalogue on the page report as the changelist actions do, then
    return to the page."""
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    url = reverse("admin:nr_llm_mcpserver_test_connection", args=[server.pk])
    response = admin_client.post(url, follow=True)
    assert response.redirect_chain == [(reverse("admin:nr_llm_mcpserver_change", args=[server.pk]), 302)]
    [(level, text)] = messages_of(response)
    assert level == "success" and text.startswith("Connection to peer: reachable in "), text

    response = admin_client.post(
        reverse("admin:nr_llm_mcpserver_import_catalogue", args=[server.pk]), follow=True
    )
    assert messages_of(response) == [
        (
            "success",
            "Import of peer ran: 10 imported, 0 skipped, 0 orphaned. "
            "New tools start disabled: enable them one by one under MCP tools.",
        )
    ]
    assert McpTool.objects.filter(server=server).count() == 10


@pytest.mark.parametrize("name", ["nr_llm_mcpserver_test_connection", "nr_llm_mcpserver_import_catalogue"])
def test_the_pages_buttons_are_post_only_and_need_the_change_permission(name):
    """A GET is refused (405); a view-only operator is refused (403); nothing is contacted."""
    server = McpServerFactory.create(url="http://127.0.0.1:9/mcp")
    client = staff_client("view_mcpserver")
    url = reverse(f"admin:{name}", args=[server.pk])
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403
    server.refresh_from_db()
    assert server.import_status == "never_imported"


def test_a_view_only_operator_reads_both_pages():
    """Without the change permission the server's and a changed tool's pages still render (read-only)."""
    tool = McpToolFactory.create(disabled_reason=DEFINITION_CHANGED, pinned_definition={"description": "old"})
    client = staff_client("view_mcpserver", "view_mcptool")
    assert client.get(reverse("admin:nr_llm_mcpserver_change", args=[tool.server_id])).status_code == 200
    page = client.get(reverse("admin:nr_llm_mcptool_change", args=[tool.pk]))
    assert page.status_code == 200
    assert "Disabled by an import: its definition changed" in page.content.decode()
