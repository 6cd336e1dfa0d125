"""The "Try tool" page: offered only for enabled tools, change permission, JSON checked first."""

import json
import re

import pytest
from django.urls import reverse

from nr_llm import own_transaction
from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.trial import try_tool
from nr_llm.models import McpServer, McpTool

from . import catalogue_peers
from .admin_clients import csrf_checking_client, staff_client
from .factories import McpServerFactory, McpToolFactory

small_catalogue_url = catalogue_peers.small_catalogue_url

pytestmark = pytest.mark.django_db(transaction=True)
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _try_url(tool) -> str:
    return reverse("admin:nr_llm_mcptool_try", args=[tool.pk])


def test_page_shows_the_form_budget_and_schema(admin_client):
    """GET shows the arguments form, the server's budget and the stored schema, and runs nothing."""
    tool = McpToolFactory.create(enabled=True, input_schema=SCHEMA, server__operation_timeout=7)
    page = admin_client.get(_try_url(tool)).content.decode()
    assert 'name="arguments"' in page
    assert "budget 7 s" in page
    assert "&quot;required&quot;: [" in page
    assert 'id="try-tool-result"' not in page


@pytest.mark.parametrize(
    ("tool_kwargs", "server_enabled", "reason"),
    [
        ({"enabled": False}, True, "it is not enabled"),
        ({"enabled": True, "orphaned": True}, True, "it is orphaned"),
        ({"enabled": True}, False, "its server is not enabled"),
    ],
)
def test_a_tool_that_cannot_run_is_refused_with_the_reason(admin_client, tool_kwargs, server_enabled, reason):
    """Disabled, orphaned, or on a disabled server: the page redirects to the tool and says why."""
    tool = McpToolFactory.create(**tool_kwargs)
    McpServer.objects.filter(pk=tool.server_id).update(enabled=server_enabled)
    response = admin_client.post(_try_url(tool), {"arguments": "{}"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("admin:nr_llm_mcptool_change", args=[tool.pk])
    assert f"Cannot try {tool.tool_name}: {reason}" in response.content.decode()


def test_the_changelist_offers_try_only_for_runnable_tools(admin_client):
    """The "Try tool" link appears on an enabled tool's row; a disabled one's cell says what it takes."""
    runnable = McpToolFactory.create(enabled=True)
    idle = McpToolFactory.create(enabled=False)
    page = admin_client.get(reverse("admin:nr_llm_mcptool_changelist")).content.decode()
    assert _try_url(runnable) in page
    assert _try_url(idle) not in page
    assert (
        '<span class="nr-llm-quiet" title="it is not enabled. A tool must be enabled to try it: tick Enabled '
        'and save.">enable it first</span>' in page
    )


def test_the_page_prefills_the_arguments_and_shows_the_schema_beside_them(admin_client):
    """The box starts with the required properties (not "{}"); box and schema share one grid (side by
    side where there is room), both before the Run's result."""
    tool = McpToolFactory.create(enabled=True, input_schema=SCHEMA)
    page = admin_client.get(_try_url(tool)).content.decode()
    assert "{\n  &quot;text&quot;: &quot;&quot;\n}</textarea>" in page
    start = page.index('<div class="nr-llm-try-grid">')
    grid = page[start : page.index("</form>", start)]
    assert 'id="id_arguments"' in grid and 'id="try-tool-schema"' in grid


def test_invalid_arguments_are_shown_and_nothing_is_sent(admin_client):
    """Arguments breaking the stored schema come back as errors with the typed text kept; no result."""
    server = McpServerFactory.create(url="http://127.0.0.1:9/mcp")
    tool = McpToolFactory.create(server=server, enabled=True, input_schema=SCHEMA)
    page = admin_client.post(_try_url(tool), {"arguments": '{"txt": 1}'}).content.decode()
    assert "arguments: &#x27;text&#x27; is a required property" in page
    assert "{&quot;txt&quot;: 1}</textarea>" in page
    assert 'id="try-tool-result"' not in page
    server.refresh_from_db()
    assert server.last_contact is None


def test_view_only_operator_cannot_try_a_tool():
    """Running a tool needs the change permission; a view-only operator gets 403."""
    client = staff_client("view_mcptool")
    tool = McpToolFactory.create(enabled=True)
    assert client.get(_try_url(tool)).status_code == 403


def test_unknown_tool_is_404(admin_client):
    """A stale link to a deleted tool is a plain not-found."""
    assert admin_client.get(reverse("admin:nr_llm_mcptool_try", args=[999999])).status_code == 404


def test_try_without_csrf_token_is_refused():
    """The page's POST is CSRF-protected like every admin form."""
    client = csrf_checking_client()
    tool = McpToolFactory.create(enabled=True)
    assert client.post(_try_url(tool), {"arguments": "{}"}).status_code == 403


def test_elapsed_time_is_measured_on_the_injected_clock():
    """The elapsed time is the clock's difference around the call; the budget is the server's."""
    tool = McpToolFactory.create(enabled=False, server__operation_timeout=9)
    readings = iter([100.0, 102.5])
    report = try_tool(tool, {}, clock=lambda: next(readings))
    assert (report.elapsed_seconds, report.budget_seconds) == (2.5, 9.0)
    assert report.is_error is True


@pytest.fixture
def imported_peer(small_catalogue_url, settings):
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


def _run(client, tool_name: str, arguments: str) -> str:
    tool = McpTool.objects.get(tool_name=tool_name)
    return str(client.post(_try_url(tool), {"arguments": arguments}).content.decode())


@pytest.mark.e2e
def test_a_valid_call_shows_the_answer_and_the_time_against_the_budget(admin_client, imported_peer):
    """echo answers through execute(): the text, a success outcome, elapsed of the 20 s budget."""
    page = _run(admin_client, "mcp_peer_echo", '{"text": "<i>hello</i>"}')
    assert '<pre id="try-tool-text">&lt;i&gt;hello&lt;/i&gt;</pre>' in page
    assert "The tool answered" in page
    assert re.search(r"Elapsed \d+\.\d\d s of the 20 s budget", page)
    assert own_transaction.settle(10)  # the stamp is handed over, not waited for
    imported_peer.refresh_from_db()
    assert imported_peer.last_contact is not None


@pytest.mark.e2e
def test_a_tool_error_is_shown_as_an_error_outcome(admin_client, imported_peer):
    """A tool that answers with isError is shown as a failed call, with the server's text."""
    page = _run(admin_client, "mcp_peer_fail", '{"reason": "on purpose"}')
    assert "The call failed" in page
    assert "(peer) reported an error: Error executing tool fail: on purpose</pre>" in page


@pytest.mark.parametrize(
    ("tool_kwargs", "server_enabled", "says"),
    [
        (
            {"enabled": False},
            True,
            "it is not enabled. A tool must be enabled to try it: tick Enabled and save.",
        ),
        (
            {"enabled": True, "orphaned": True},
            True,
            "it is orphaned (gone from its server&#x27;s catalogue).",
        ),
        ({"enabled": True}, False, "its server is not enabled. Enable its MCP server first."),
    ],
)
def test_the_change_page_of_a_tool_that_cannot_run_says_what_to_do(
    admin_client, tool_kwargs, server_enabled, says
):
    """Instead of an empty "Try" field, the tool's page says why it cannot be tried and how to fix it."""
    tool = McpToolFactory.create(**tool_kwargs)
    McpServer.objects.filter(pk=tool.server_id).update(enabled=server_enabled)
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[tool.pk])).content.decode()
    assert f"Not available: {says}" in page
    assert _try_url(tool) not in page


def test_the_change_page_of_a_runnable_tool_links_to_try_it_and_says_it_is_not_orphaned(admin_client):
    """A runnable tool's page has the Try tool link and answers "orphaned" with a no."""
    tool = McpToolFactory.create(enabled=True)
    page = admin_client.get(reverse("admin:nr_llm_mcptool_change", args=[tool.pk])).content.decode()
    assert f'<a href="{_try_url(tool)}">Try tool</a>' in page
    assert "no: the server still offers it" in page


def test_the_try_page_runs_the_same_bounded_check_as_execute(admin_client):
    """A catastrophic server pattern on a long typed value: the page answers near the check's budget
    with the same sentence execute() gives, and nothing is sent (generous bound for a loaded machine)."""

    from nr_llm.tools.arguments import argument_problems

    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "(x+x+)+y"}}}
    tool = McpToolFactory.create(enabled=True, input_schema=schema)
    page = admin_client.post(_try_url(tool), {"arguments": '{"text": "' + "x" * 5000 + '"}'}).content.decode()
    (expected,) = argument_problems(schema, {"text": "x" * 5000}, seconds=0.01)
    assert expected.replace("0.01 s", "1 s") in page
    assert 'id="try-tool-result"' not in page


def test_the_prefilled_arguments_follow_local_references(admin_client):
    """A pydantic schema's nested model (a $ref into $defs) is prefilled with its own required fields."""
    schema = {
        "type": "object",
        "$defs": {
            "Address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "Person": {
                "type": "object",
                "properties": {"age": {"type": "integer"}, "address": {"$ref": "#/$defs/Address"}},
                "required": ["age", "address"],
            },
        },
        "properties": {"person": {"$ref": "#/$defs/Person"}},
        "required": ["person"],
    }
    tool = McpToolFactory.create(enabled=True, input_schema=schema)
    page = admin_client.get(_try_url(tool)).content.decode()
    prefilled = json.dumps({"person": {"age": 0, "address": {"city": ""}}}, indent=2).replace('"', "&quot;")
    assert prefilled + "</textarea>" in page
