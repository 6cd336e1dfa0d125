"""Import service: refusals, skips and reconciliation, on catalogues shaped by a fake client.

What a real server does (500 tools over 50 pages, a spent budget) is in
tests/catalogue/test_catalogue_sdk.py against the official SDK server.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from nr_llm import tools
from nr_llm.catalogue import ImportProgress, ImportReport, import_catalogue
from nr_llm.mcp import McpTransportError
from nr_llm.models import ImportStatus, McpTool

from ..factories import McpServerFactory, McpToolFactory
from ..fakes import FakeClient, tool

pytestmark = pytest.mark.django_db


def _snapshot(server):
    return list(McpTool.objects.filter(server=server).order_by("tool_name").values())


def _names(server):
    return sorted(McpTool.objects.filter(server=server).values_list("tool_name", flat=True))


# --- refusals ---------------------------------------------------------------------------


def _refused_leaves_catalogue(server, client, reason_part):
    McpToolFactory.create(server=server, remote_name="kept", enabled=True)
    before = _snapshot(server)
    report = import_catalogue(server, client=client)
    assert not report.ok
    assert report.status == "error"
    assert reason_part in report.refused
    assert (report.imported, report.skipped, report.orphaned) == (0, 0, 0)
    assert _snapshot(server) == before
    server.refresh_from_db()
    assert server.import_status == ImportStatus.ERROR
    assert reason_part in server.import_error
    assert server.last_imported is None


def test_a_server_without_a_declared_data_class_is_refused_before_any_contact():
    """No data class: refused with the reason, the catalogue untouched, the server never asked."""
    server = McpServerFactory.create(data_class="")
    client = FakeClient([tool("echo")])
    _refused_leaves_catalogue(server, client, "no data class is declared")
    assert client.endpoints == []


def test_a_server_without_a_url_is_refused_before_any_contact():
    """No URL: refused, nothing changed, nothing sent."""
    server = McpServerFactory.create(url="")
    client = FakeClient([tool("echo")])
    _refused_leaves_catalogue(server, client, "no URL is configured")
    assert client.endpoints == []


def test_more_than_500_tools_is_refused_never_truncated():
    """501 advertised tools: refused with the count; not one of them is written."""
    server = McpServerFactory.create()
    client = FakeClient([tool(f"t{i}") for i in range(501)])
    _refused_leaves_catalogue(server, client, "advertises 501 tools; at most 500")


def test_exactly_500_tools_are_imported():
    """500 is the limit, inclusive."""
    server = McpServerFactory.create()
    report = import_catalogue(server, client=FakeClient([tool(f"t{i}") for i in range(500)]))
    assert (report.ok, report.imported) == (True, 500)


def test_a_transport_error_is_refused_with_its_message_as_the_reason():
    # A server failure is not this installation's budget: no setting is named.
    """Any McpTransportError from the walk: its message is the reason, the catalogue stays."""
    server = McpServerFactory.create()
    error = McpTransportError("status", server.identifier, f"MCP server {server.identifier} answered 503")
    _refused_leaves_catalogue(server, FakeClient(error=error), "answered 503")
    assert server.import_error == f"MCP server {server.identifier} answered 503"


@pytest.mark.parametrize("kind", ["deadline_exhausted", "timeout"])
@pytest.mark.parametrize(
    ("override", "where"), [(None, "NR_LLM_MCP_OPERATION_TIMEOUT"), (5, "this server's operation budget")]
)
def test_a_spent_budget_names_where_this_installation_sets_it(kind, override, where):
    """A spent budget (before or during a leg) keeps the client's message and names its setting."""
    server = McpServerFactory.create(operation_timeout=override)
    error = McpTransportError(kind, server.identifier, "budget of 5 s is spent")
    report = import_catalogue(server, client=FakeClient(error=error))
    assert report.refused == f"budget of 5 s is spent (set in {where})"


def test_a_refusal_after_a_good_import_keeps_the_good_catalogue_and_its_tool_count():
    """A failed walk does not orphan, delete or recount anything imported before."""
    server = McpServerFactory.create()
    import_catalogue(server, client=FakeClient([tool("a"), tool("b")]))
    error = McpTransportError("unreachable", server.identifier, "could not connect")
    report = import_catalogue(server, client=FakeClient(error=error))
    server.refresh_from_db()
    assert report.refused == "could not connect"
    assert (server.tool_count, server.import_status) == (2, ImportStatus.ERROR)
    assert McpTool.objects.filter(server=server, orphaned=False).count() == 2


def test_the_endpoint_carries_the_servers_budget():
    """The walk runs under operation_timeout, else NR_LLM_MCP_OPERATION_TIMEOUT."""
    client = FakeClient([])
    import_catalogue(McpServerFactory.create(operation_timeout=7), client=client)
    assert client.endpoints[0].budget_seconds == 7.0


def test_without_a_server_override_the_installation_budget_applies(settings):
    """No per-server budget: the installation's setting is the walk's budget."""
    settings.NR_LLM_MCP_OPERATION_TIMEOUT = 41
    client = FakeClient([])
    import_catalogue(McpServerFactory.create(operation_timeout=None), client=client)
    assert client.endpoints[0].budget_seconds == 41.0


# --- skips ------------------------------------------------------------------------------


def _import(tools_, **server_fields):
    server = McpServerFactory.create(identifier="demo", **server_fields)
    return server, import_catalogue(server, client=FakeClient(tools_))


@pytest.mark.parametrize("entry", [{"inputSchema": {"type": "object"}}, tool(""), tool(None), tool(7)])
def test_a_tool_without_a_name_is_skipped_with_its_position(entry):
    """No usable name: skipped, the reason says which entry, the others still import."""
    server, report = _import([tool("ok"), entry])
    assert report.skip_reasons == ("tool #2 has no name",)
    assert (report.imported, report.skipped, report.status) == (1, 1, "partial")
    assert _names(server) == ["mcp_demo_ok"]


def test_a_name_outside_the_rule_is_skipped_not_rewritten():
    """A local name with a space or over 64 characters is skipped; nothing similar is created."""
    long_name = "x" * 60
    server, report = _import([tool("get weather"), tool(long_name)])
    assert report.skipped == 2
    assert "'get weather': remote tool name 'get weather' has characters outside" in report.skip_reasons[0]
    assert "would be 69 characters; at most 64" in report.skip_reasons[1]
    assert _names(server) == []


def test_two_remote_tools_mapping_to_one_local_name_are_both_skipped():
    """Duplicate names: neither is imported, since a call could reach either."""
    server, report = _import([tool("dup"), tool("dup", description="other"), tool("fine")])
    assert (report.imported, report.skipped) == (1, 2)
    assert report.skip_reasons == (
        "2 remote tools map to the local name mcp_demo_dup; none of them is imported",
    )
    assert _names(server) == ["mcp_demo_fine"]


def test_a_collision_with_a_locally_registered_tool_is_skipped():
    """A remote tool may never take the name of the site's own tool."""
    tools.register("mcp_demo_search", "The site's search", {"type": "object"}, lambda: "local")
    try:
        server, report = _import([tool("search"), tool("other")])
    finally:
        tools.unregister("mcp_demo_search")
    assert report.skip_reasons == (
        "'search': local name mcp_demo_search is taken by a locally registered tool",
    )
    assert _names(server) == ["mcp_demo_other"]


def test_a_collision_with_another_servers_tool_is_skipped_and_that_tool_is_untouched():
    """Server a_b's tool c and server a's tool b_c share mcp_a_b_c: the second import skips it."""
    first = McpServerFactory.create(identifier="a_b")
    import_catalogue(first, client=FakeClient([tool("c", description="first")]))
    second = McpServerFactory.create(identifier="a")
    report = import_catalogue(second, client=FakeClient([tool("b_c", description="second")]))
    assert report.skip_reasons == ("'b_c': local name mcp_a_b_c already belongs to server a_b",)
    row = McpTool.objects.get(tool_name="mcp_a_b_c")
    assert (row.server_id, row.description) == (first.pk, "first")


def test_a_schema_that_cannot_be_represented_is_skipped_with_the_normalisers_reason():
    """The skip reason names the tool and the normaliser's rule."""
    refs = {"type": "object", "properties": {"q": {"$ref": "https://schemas.example/q.json"}}}
    server, report = _import([tool("refs", refs), tool("arr", {"type": "array"})])
    assert report.skip_reasons == (
        "'refs': \"$ref\" at /properties/q/$ref points outside the schema "
        "('https://schemas.example/q.json'); only \"#/...\" pointers are followed, a network "
        "reference is never fetched, and the schema is not offered without it",
        '\'arr\': input schema\'s top-level "type" must be "object"',
    )
    assert _names(server) == []


def test_a_non_string_description_is_skipped():
    """A description that is not text is malformed, and the reason says so."""
    _, report = _import([tool("odd", description=["x"])])
    assert report.skip_reasons == ("'odd': description is not a string",)


def test_a_skip_reason_carries_no_control_characters_from_remote_text():
    """A hostile remote name cannot forge extra report lines."""
    _, report = _import([tool("bad\nname: 0 skipped")])
    assert "\n" not in report.skip_reasons[0]


# --- reconciliation ---------------------------------------------------------------------


def test_new_tools_start_disabled_with_their_normalised_schema_and_annotations():
    """An import creates disabled rows; the stored schema is the normalised one."""
    schema = {"type": "object", "$comment": "dropped", "properties": {"text": {"type": "string"}}}
    server, report = _import(
        [tool("echo", schema, description="Echo it", annotations={"readOnlyHint": True})]
    )
    row = McpTool.objects.get(server=server)
    assert (row.tool_name, row.remote_name, row.description) == ("mcp_demo_echo", "echo", "Echo it")
    assert row.input_schema == {"type": "object", "properties": {"text": {"type": "string"}}}
    assert row.remote_annotations == {"readOnlyHint": True}
    assert (row.enabled, row.orphaned, row.orphaned_at) == (False, False, None)
    assert (report.imported, report.status) == (1, "ok")


def test_an_import_records_status_tool_count_and_last_imported():
    """ok with no skips, the count of imported tools and the time of the import."""
    server, _ = _import([tool("a"), tool("b")])
    server.refresh_from_db()
    assert (server.import_status, server.import_error, server.tool_count) == (ImportStatus.OK, "", 2)
    assert server.last_imported is not None
    assert timezone.now() - server.last_imported < timedelta(minutes=1)


def test_a_partial_import_records_the_skip_reasons_on_the_server():
    """partial, and every skip reason on its own line of import_error."""
    server, report = _import([tool("a"), tool(""), tool("b c")])
    server.refresh_from_db()
    assert server.import_status == ImportStatus.PARTIAL
    assert server.import_error.splitlines() == list(report.skip_reasons)
    assert server.tool_count == 1


def test_the_callers_server_instance_reflects_the_outcome():
    """The passed instance is updated too, so an admin message reads the new state."""
    server, _ = _import([tool("a")])
    assert (server.import_status, server.tool_count) == (ImportStatus.OK, 1)


def test_upsert_updates_a_changed_tool_and_keeps_a_disabled_one_disabled():
    """A changed description/schema of a disabled tool is written, and it stays disabled (an
    enabled one's change is held for review: tests/catalogue/test_catalogue_pins.py)."""
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("echo", description="v1")]))
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    report = import_catalogue(server, client=FakeClient([tool("echo", schema, description="v2")]))
    row = McpTool.objects.get()
    assert (row.description, row.input_schema, row.enabled, report.changed) == ("v2", schema, False, ())


def test_a_vanished_tool_is_orphaned_never_deleted_and_keeps_when_it_first_vanished():
    """orphaned_at is set once, when the tool first disappears, and survives later imports."""
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("a"), tool("b")]))
    report = import_catalogue(server, client=FakeClient([tool("a")]))
    assert report.orphaned == 1
    first_seen = McpTool.objects.get(remote_name="b").orphaned_at
    assert first_seen is not None
    McpTool.objects.filter(remote_name="b").update(orphaned_at=first_seen - timedelta(days=3))
    report = import_catalogue(server, client=FakeClient([tool("a")]))
    row = McpTool.objects.get(remote_name="b")
    assert (row.orphaned, row.orphaned_at, report.orphaned) == (True, first_seen - timedelta(days=3), 1)
    assert McpTool.objects.count() == 2


def test_a_returning_tool_is_un_orphaned_and_keeps_its_enabled_state():
    """A tool that comes back is offered again as the operator left it."""
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("a")]))
    McpTool.objects.update(enabled=True)
    import_catalogue(server, client=FakeClient([]))
    assert McpTool.objects.get().orphaned is True
    report = import_catalogue(server, client=FakeClient([tool("a")]))
    row = McpTool.objects.get()
    assert (row.orphaned, row.orphaned_at, row.enabled, report.orphaned) == (False, None, True, 0)


def test_a_previously_imported_tool_whose_schema_is_now_refused_is_orphaned():
    """A tool that can no longer be represented is not left on offer with its stale schema."""
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("a")]))
    report = import_catalogue(server, client=FakeClient([tool("a", {"type": "object", "if": {}})]))
    assert (report.skipped, report.orphaned) == (1, 1)
    assert McpTool.objects.get().orphaned is True


def test_other_servers_tools_are_not_touched():
    """Reconciling one server never orphans another server's tools."""
    other = McpToolFactory.create()
    before = McpTool.objects.filter(pk=other.pk).values().get()
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("a")]))
    assert McpTool.objects.filter(pk=other.pk).values().get() == before


def test_progress_reports_walking_pages_walked_and_reconciled():
    """The progress callback sees each stage with the tool counts."""
    seen: list[ImportProgress] = []
    server = McpServerFactory.create(identifier="demo")
    import_catalogue(server, client=FakeClient([tool("a"), tool("")]), progress=seen.append)
    assert [(p.stage, p.tools, p.pages) for p in seen] == [
        ("walking", 0, 0),
        ("page", 2, 1),
        ("walked", 2, 0),
        ("reconciled", 1, 0),
    ]


def test_report_status_and_ok_follow_refusal_and_skips():
    """ok is "not refused"; status is error, partial or ok."""
    assert ImportReport("s", 1, 0, 0, ()).status == "ok"
    assert ImportReport("s", 1, 1, 0, ("r",)).status == "partial"
    refused = ImportReport("s", 0, 0, 0, (), refused="no URL")
    assert (refused.status, refused.ok) == ("error", False)


def test_a_name_claimed_concurrently_by_another_server_is_a_refusal_not_a_crash(monkeypatch):
    """If another server's import wins a tool name between our check and our insert, the
    unique constraint fires; the import is refused with a reason and changes nothing."""
    from django.db import IntegrityError

    server = McpServerFactory.create()
    McpToolFactory.create(server=server, remote_name="kept", enabled=True)
    before = _snapshot(server)

    def lost_the_race(*args, **kwargs):
        raise IntegrityError("duplicate key value violates unique constraint")

    monkeypatch.setattr(McpTool.objects, "bulk_create", lost_the_race)
    report = import_catalogue(server, client=FakeClient([tool("kept"), tool("new")]))
    assert report.status == "error"
    assert "run the import again" in report.refused
    assert _snapshot(server) == before
    server.refresh_from_db()
    assert server.import_status == ImportStatus.ERROR
