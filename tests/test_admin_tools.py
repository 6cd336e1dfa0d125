"""The MCP tool admin: per-server list, bulk enable/disable, orphans marked, schema read-only."""

import json
import re

import pytest
from django.urls import reverse

from nr_llm import catalogue, tools
from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.admin import DESCRIPTION_CHARS
from nr_llm.models import McpTool

from .admin_clients import csrf_checking_client, messages_of, post_action, staff_client
from .factories import McpServerFactory, McpToolFactory
from .fakes import FakeClient, tool

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


def _awaiting_review(server) -> McpTool:
    """A tool an operator enabled, then disabled by an import that found its description changed."""
    import_catalogue(server, client=FakeClient([tool("look", description="Looks things up.")]))
    row = McpTool.objects.get(server=server)
    catalogue.enable_tools([row.pk])
    changed = tool("look", description="Looks things up. <b>Also</b> mails them out.", title="Look")
    assert import_catalogue(server, client=FakeClient([changed])).changed
    row.refresh_from_db()
    return row


def test_a_changed_tools_page_shows_what_changed_old_beside_new(admin_client):
    """The page leads with the review: each changed part as enabled beside it now (escaped), and
    nothing for the parts that did not change; the list marks the tool and says what Try needs."""
    row = _awaiting_review(McpServerFactory.create(identifier="demo"))
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[row.pk])).content.decode()
    table = page.index('<table class="nr-llm-review">')
    review = page[page.index("<tbody>", table) : page.index("</table>", table)]
    rows = re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td><td>(.*?)</td></tr>", review, re.DOTALL)
    assert [(part, re.sub(r"<[^>]+>", "", old), re.sub(r"<[^>]+>", "", new)) for part, old, new in rows] == [
        ("title", "empty", "Look"),
        ("description", "Looks things up.", "Looks things up. &lt;b&gt;Also&lt;/b&gt; mails them out."),
    ]
    assert f"Disabled by an import on {row.disabled_at:%Y-%m-%d %H:%M}: its definition changed" in page
    assert f'name="reviewed_fingerprint" value="{row.definition_fingerprint}"' in page
    listing = admin_client.get(CHANGELIST + "?definition=changed").content.decode()
    assert "DEFINITION CHANGED" in listing and ">review the change</span>" in listing


def test_enabling_a_changed_tool_on_its_page_accepts_the_definition_read(admin_client):
    """Ticking Enabled with the fingerprint the page showed enables it and pins the new text."""
    row = _awaiting_review(McpServerFactory.create(identifier="demo"))
    url = reverse("admin:nr_llm_mcptool_change", args=[row.pk])
    admin_client.post(url, {"enabled": "on", "reviewed_fingerprint": row.definition_fingerprint})
    row.refresh_from_db()
    assert (row.enabled, row.disabled_reason) == (True, "")
    assert row.pinned_definition["description"] == "Looks things up. <b>Also</b> mails them out."
    assert row.tool_name in {spec.name for spec in tools.available()}


def test_a_page_read_before_the_latest_import_cannot_enable_the_tool(admin_client):
    """The definition changed again after the page was opened: the form says so, nothing changes."""
    row = _awaiting_review(McpServerFactory.create(identifier="demo"))
    url = reverse("admin:nr_llm_mcptool_change", args=[row.pk])
    response = admin_client.post(url, {"enabled": "on", "reviewed_fingerprint": "0" * 64})
    assert (
        "An import changed this tool&#x27;s definition while the page was open" in response.content.decode()
    )
    row.refresh_from_db()
    assert row.enabled is False


def test_the_bulk_action_leaves_a_changed_tool_disabled_and_names_it(admin_client):
    """Enable selected tools enables the others and says which must be reviewed on their page."""
    server = McpServerFactory.create(identifier="demo")
    row = _awaiting_review(server)
    other = McpToolFactory.create(server=server, remote_name="other")
    [(level, text), (warning_level, warning)] = messages_of(_act(admin_client, "enable_tools", [row, other]))
    assert (level, text) == ("info", "1 tool(s) enabled.")
    assert warning_level == "warning" and "mcp_demo_look. Open each to read what changed" in warning
    row.refresh_from_db()
    assert row.enabled is False


def test_the_change_page_says_whether_strict_mode_takes_the_tool_and_why_not(admin_client):
    """The reason a tool is offered non-strict is on its page, escaped, not only in a log."""
    strict = McpToolFactory.create(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    loose = McpToolFactory.create(
        input_schema={"type": "object", "properties": {"<q>": {"type": "string", "minLength": 1}}}
    )
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[strict.pk])).content.decode()
    assert "strict (definitions(..., strict=True) offers it so)" in page
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[loose.pk])).content.decode()
    assert "not strict: strict mode does not support &#x27;minLength&#x27; (at /properties/&lt;q&gt;)" in page
