"""Bad input never crashes an import or corrupts the catalogue: malformed entries, and a
server row edited or deleted while its catalogue was being fetched."""

import pytest

from nr_llm.catalogue import MAX_DESCRIPTION, import_catalogue
from nr_llm.models import ImportStatus, McpServer, McpTool

from ..factories import McpServerFactory, McpToolFactory
from ..fakes import FakeClient, tool

pytestmark = pytest.mark.django_db


def _import(entries):
    server = McpServerFactory.create(identifier="demo")
    return server, import_catalogue(server, client=FakeClient(entries))


def _names(server):
    return sorted(McpTool.objects.filter(server=server).values_list("tool_name", flat=True))


@pytest.mark.parametrize("name", [None, 7, 7.5, True, ["a"], {"a": 1}])
def test_a_name_that_is_not_text_is_skipped_and_the_rest_import(name):
    """A number, list, object or null as a name is "no name", never a crash."""
    server, report = _import([tool(name), tool("ok")])
    assert report.skip_reasons == ("tool #1 has no name",)
    assert _names(server) == ["mcp_demo_ok"]


@pytest.mark.parametrize("schema", [[], ["type", "object"], "object", 1])
def test_a_schema_that_is_not_an_object_is_skipped_with_a_reason(schema):
    """A list, string, number or missing input schema is refused in words; the rest imports."""
    server, report = _import([tool("odd", schema), tool("ok")])
    assert len(report.skip_reasons) == 1
    assert report.skip_reasons[0].startswith("'odd': input schema is ")
    assert report.skip_reasons[0].endswith(", not a JSON object")
    assert _names(server) == ["mcp_demo_ok"]


def test_a_10000_character_name_is_skipped_with_a_short_reason():
    """The reason says the length and clips the remote name; nothing long reaches import_error."""
    server, report = _import([tool("n" * 10_000)])
    (reason,) = report.skip_reasons
    assert "would be 10009 characters; at most 64" in reason
    assert len(reason) < 600
    server.refresh_from_db()
    assert server.import_error == reason
    assert _names(server) == []


def test_a_huge_description_is_clipped_not_refused():
    """A megabyte of description is stored clipped to MAX_DESCRIPTION characters."""
    server, report = _import([tool("big", description="d" * 1_000_000)])
    assert report.imported == 1
    assert McpTool.objects.get(server=server).description == "d" * MAX_DESCRIPTION


def test_names_differing_only_by_case_are_two_tools():
    """Local names are case-sensitive in every function-calling API, so both import, apart."""
    server, report = _import([tool("Search", description="upper"), tool("search", description="lower")])
    assert (report.imported, report.skipped) == (2, 0)
    rows = dict(McpTool.objects.filter(server=server).values_list("tool_name", "description"))
    assert rows == {"mcp_demo_Search": "upper", "mcp_demo_search": "lower"}


class EditingClient(FakeClient):
    """Answers the walk, but an operator saves the server row while it runs."""

    def __init__(self, tools, **edit):
        super().__init__(tools)
        self.edit = edit

    def list_tools(self, endpoint, on_page=None):
        answer = super().list_tools(endpoint, on_page)
        McpServer.objects.filter(identifier=endpoint.identifier).update(**self.edit)
        return answer


@pytest.mark.parametrize(
    "edit",
    [{"identifier": "renamed"}, {"url": "http://127.0.0.1:9/other"}, {"data_class": ""}],
    ids=["identifier", "url", "data_class"],
)
def test_a_server_edited_during_the_walk_is_refused_and_its_catalogue_kept(edit):
    """The fetched catalogue belongs to the row as it was: a changed identifier (the tools'
    names), URL (where they came from) or a withdrawn data class refuses the import."""
    server = McpServerFactory.create(identifier="demo")
    McpToolFactory.create(server=server, remote_name="kept", enabled=True)
    before = list(McpTool.objects.order_by("pk").values())
    report = import_catalogue(server, client=EditingClient([tool("kept"), tool("new")], **edit))
    assert report.status == "error"
    assert "changed while its catalogue was fetched" in report.refused
    assert list(McpTool.objects.order_by("pk").values()) == before
    server.refresh_from_db()
    assert (server.import_status, server.import_error) == (ImportStatus.ERROR, report.refused)
    assert server.last_imported is None


def test_an_edit_that_does_not_touch_the_catalogue_lets_the_import_through():
    """Renaming the display name meanwhile does not change which tools these are."""
    server = McpServerFactory.create(identifier="demo")
    report = import_catalogue(server, client=EditingClient([tool("a")], name="New name"))
    assert (report.status, _names(server)) == ("ok", ["mcp_demo_a"])


class DeletingClient(FakeClient):
    """Answers the walk, but the server row is deleted while it runs."""

    def list_tools(self, endpoint, on_page=None):
        answer = super().list_tools(endpoint, on_page)
        McpServer.objects.filter(identifier=endpoint.identifier).delete()
        return answer


def test_a_server_deleted_during_the_walk_is_a_refusal_and_writes_nothing():
    """No row to reconcile into: a refusal with the reason, no tool row created."""
    server = McpServerFactory.create(identifier="demo")
    report = import_catalogue(server, client=DeletingClient([tool("a")]))
    assert report.refused == "the server was deleted during the import"
    assert McpTool.objects.count() == 0
    assert not McpServer.objects.exists()


def test_a_refusal_for_a_deleted_server_does_not_fail():
    """Refusing (no data class) a row deleted since it was read neither fails nor brings it back."""
    server = McpServerFactory.create(data_class="")
    McpServer.objects.filter(pk=server.pk).delete()
    report = import_catalogue(server, client=FakeClient([tool("a")]))
    assert report.status == "error"
    assert not McpServer.objects.exists()


def test_a_description_keeps_its_lines_but_loses_control_and_bidi_characters():
    """NUL (which PostgreSQL cannot store), escape sequences and bidi overrides are removed;
    line breaks and tabs, which descriptions use, stay."""
    server, report = _import([tool("odd", description="Fine\u202eevil\x1b[31m\x00 text\nline\ttwo")])
    assert report.imported == 1
    assert McpTool.objects.get(server=server).description == "Fineevil[31m text\nline\ttwo"


def test_a_schema_holding_a_nul_character_is_skipped_with_a_reason():
    """A NUL anywhere in the schema (a property name, a description) cannot be stored: skipped."""
    schema = {"type": "object", "properties": {"a\x00b": {"type": "string"}}}
    server, report = _import([tool("nul", schema), tool("ok")])
    assert report.skip_reasons == ("'nul': input schema contains a NUL character, which cannot be stored",)
    assert _names(server) == ["mcp_demo_ok"]


def test_annotations_holding_a_nul_character_are_skipped_with_a_reason():
    """Annotations are stored as the server sent them, so a NUL there skips the tool."""
    server, report = _import([tool("nul", annotations={"title": "x\x00"}), tool("ok")])
    assert report.skip_reasons == ("'nul': annotations contain a NUL character, which cannot be stored",)
    assert _names(server) == ["mcp_demo_ok"]
