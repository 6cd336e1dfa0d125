"""The MCP tool admin: per-server list, bulk enable/disable, orphans marked, schema read-only."""

import json
import re

import pytest
from django.urls import reverse

from nr_llm.admin import DESCRIPTION_CHARS
from nr_llm.models import McpTool

from .admin_clients import csrf_checking_client, post_action, staff_client
from .factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:nr_llm_mcptool_changelist")


def _act(client, action: str, tools: list[McpTool]):
    return post_action(client, CHANGELIST, action, tools)


def test_bulk_enable_and_disable(admin_client):
    """Selected tools are enabled, then disabled, and the message counts them."""
    tools = McpToolFactory.create_batch(3)
    response = _act(admin_client, "enable_tools", tools[:2])
    assert "2 tool(s) enabled." in response.content.decode()
    assert sorted(McpTool.objects.filter(enabled=True).values_list("pk", flat=True)) == [
        t.pk for t in tools[:2]
    ]

    response = _act(admin_client, "disable_tools", tools)
    assert "2 tool(s) disabled." in response.content.decode()
    assert not McpTool.objects.filter(enabled=True).exists()


def test_enabling_stamps_updated(admin_client):
    """An operator's enable is an edit: the row's updated time moves."""
    tool = McpToolFactory.create()
    before = tool.updated
    _act(admin_client, "enable_tools", [tool])
    tool.refresh_from_db()
    assert tool.updated > before


def test_orphans_are_left_disabled_with_a_warning(admin_client):
    """Enabling an orphan does nothing and the operator is told why."""
    live = McpToolFactory.create()
    orphan = McpToolFactory.create(orphaned=True)
    page = _act(admin_client, "enable_tools", [live, orphan]).content.decode()
    assert "1 tool(s) enabled." in page
    assert "1 orphaned tool(s) left disabled" in page
    orphan.refresh_from_db()
    assert orphan.enabled is False


def test_orphans_are_visibly_marked_in_the_list(admin_client):
    """An orphaned tool's row carries the ORPHANED mark; a live one does not."""
    McpToolFactory.create(remote_name="gone", orphaned=True)
    McpToolFactory.create(remote_name="here")
    page = admin_client.get(CHANGELIST).content.decode()
    assert page.count("ORPHANED") == 1
    assert page.index("ORPHANED") > page.index("_gone")


def test_list_filters_by_server(admin_client):
    """The tools of one server are one filter away (the server list links to it)."""
    mine = McpToolFactory.create(remote_name="mine")
    McpToolFactory.create(remote_name="theirs")
    page = admin_client.get(CHANGELIST + f"?server__id__exact={mine.server_id}").content.decode()
    assert "_mine" in page
    assert "_theirs" not in page


def test_schema_is_read_only_and_pretty_printed(admin_client):
    """The change page shows the stored schema indented, escaped, and offers no field to edit it."""
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": "<b>x</b>"}}}
    tool = McpToolFactory.create(input_schema=schema)
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[tool.pk])).content.decode()
    pretty = json.dumps(schema, indent=2, sort_keys=True).replace('"', "&quot;").replace("<", "&lt;")
    assert pretty.replace(">", "&gt;") in page
    assert 'name="input_schema"' not in page


def test_only_enabled_is_editable_on_the_change_form(admin_client):
    """Posting the change form changes enabled, and nothing the catalogue owns."""
    tool = McpToolFactory.create(description="from the server")
    url = reverse("admin:nr_llm_mcptool_change", args=[tool.pk])
    admin_client.post(url, {"enabled": "on", "description": "typed by hand", "tool_name": "renamed"})
    tool.refresh_from_db()
    assert tool.enabled is True
    assert (tool.description, tool.tool_name) != ("typed by hand", "renamed")


def test_an_orphan_cannot_be_enabled_on_its_change_form(admin_client):
    """The change form offers no enabled checkbox for a disabled orphan, and a forged POST is ignored."""
    orphan = McpToolFactory.create(orphaned=True)
    url = reverse("admin:nr_llm_mcptool_change", args=[orphan.pk])
    assert 'name="enabled"' not in admin_client.get(url).content.decode()
    admin_client.post(url, {"enabled": "on"})
    orphan.refresh_from_db()
    assert orphan.enabled is False


def test_tools_cannot_be_added_by_hand(admin_client):
    """The add page is refused: tools come from an import."""
    assert admin_client.get(reverse("admin:nr_llm_mcptool_add")).status_code == 403


def test_view_only_operator_cannot_see_or_run_bulk_actions():
    """Without the change permission the actions are not offered and a forged POST changes nothing."""
    client = staff_client("view_mcptool")
    tool = McpToolFactory.create()
    page = client.get(CHANGELIST).content.decode()
    assert "enable_tools" not in page
    _act(client, "enable_tools", [tool])
    tool.refresh_from_db()
    assert tool.enabled is False


def test_bulk_action_is_refused_without_a_csrf_token():
    """A cross-site POST without the CSRF token is rejected and changes nothing."""
    client = csrf_checking_client()
    tool = McpToolFactory.create()
    response = client.post(CHANGELIST, {"action": "enable_tools", "_selected_action": [tool.pk]})
    assert response.status_code == 403
    tool.refresh_from_db()
    assert tool.enabled is False


def test_server_changelist_links_to_its_tools(admin_client):
    """The tools column of a server links to the tool list filtered to that server."""
    server = McpServerFactory.create()
    page = admin_client.get(reverse("admin:nr_llm_mcpserver_changelist")).content.decode()
    assert f'href="{CHANGELIST}?server__id__exact={server.pk}"' in page


def test_the_list_shows_names_breakable_and_descriptions_clipped(admin_client):
    """The name breaks only after "_", the description is one clipped line under it, the remote
    name sits under the server's name."""
    server = McpServerFactory.create(name="Docs")
    McpToolFactory.create(
        server=server, tool_name="mcp_docs_admin_report", remote_name="admin_report", description="d " * 100
    )
    McpToolFactory.create(server=server, tool_name="mcp_docs_bare", remote_name="bare", description="")
    page = admin_client.get(CHANGELIST).content.decode()
    assert "mcp_<wbr>docs_<wbr>admin_<wbr>report" in page
    assert "d d d" in page and ("d " * 100).strip() not in page.split("title=")[0]
    clipped = re.search(r'<span title="[^"]*">((?:d )+d…)</span>', page)
    assert clipped and len(clipped.group(1)) == DESCRIPTION_CHARS
    assert "no description" in page
    assert 'Docs<div class="nr-llm-detail">admin_<wbr>report</div>' in page
