"""Catalogue import against the official Python SDK server on 127.0.0.1.

The peer advertises the five demo tools plus 495 generated ones, ten per page: 500 tools
over 50 pages, the most a walk follows.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nr_llm.catalogue import ImportProgress, import_catalogue
from nr_llm.mcp import ConnectionSettings, McpClient
from nr_llm.models import ImportStatus, McpTool
from nr_llm.servers.endpoints import mcp_client
from tests import catalogue_peers
from tests.peers import sdk_server

from ..factories import McpServerFactory

# Shared fixtures, registered in this module under their own names.
small_catalogue_url = catalogue_peers.small_catalogue_url
loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db, pytest.mark.e2e, pytest.mark.usefixtures("loopback_allowed")]

TOOL_TABLE = McpTool._meta.db_table


@pytest.fixture(scope="module")
def url():
    with sdk_server("--stateless", "--extra-tools", "495", "--page-size", "10") as url:
        yield url


def _tool_writes(queries):
    return [
        q["sql"]
        for q in queries.captured_queries
        if TOOL_TABLE in q["sql"] and q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]


def test_500_tools_over_50_pages_are_imported_disabled(url):
    """Every tool of every page arrives once, disabled, under mcp_<identifier>_<remote>."""
    server = McpServerFactory.create(identifier="sdk", url=url)
    report = import_catalogue(server)
    assert (report.ok, report.imported, report.skipped, report.orphaned) == (True, 500, 0, 0)
    rows = McpTool.objects.filter(server=server)
    assert rows.count() == 500
    assert not rows.filter(enabled=True).exists()
    names = set(rows.values_list("tool_name", flat=True))
    assert {
        "mcp_sdk_echo",
        "mcp_sdk_add",
        "mcp_sdk_fail",
        "mcp_sdk_generated_000",
        "mcp_sdk_generated_494",
    } <= names
    echo = rows.get(remote_name="echo")
    assert echo.description == "Return the text unchanged."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["required"] == ["text"]
    server.refresh_from_db()
    assert (server.import_status, server.tool_count, server.import_error) == (ImportStatus.OK, 500, "")
    assert server.last_contact is not None  # the walk was observed as a contact


def test_progress_hears_every_one_of_the_50_pages(url):
    """The walk reports each page as it arrives: 50 pages, ten more tools each time."""
    seen: list[ImportProgress] = []
    server = McpServerFactory.create(identifier="sdk", url=url)
    import_catalogue(server, progress=seen.append)
    pages = [(event.pages, event.tools) for event in seen if event.stage == "page"]
    assert pages == [(n, 10 * n) for n in range(1, 51)]
    assert [event.stage for event in seen if event.stage != "page"] == ["walking", "walked", "reconciled"]


def test_a_second_import_of_the_same_catalogue_writes_no_tool_rows(url):
    """Importing twice changes nothing: the second run compares and writes no tool row."""
    server = McpServerFactory.create(identifier="sdk", url=url)
    with CaptureQueriesContext(connection) as first:
        import_catalogue(server)
    before = list(McpTool.objects.order_by("tool_name").values())
    with CaptureQueriesContext(connection) as second:
        report = import_catalogue(server)
    assert (report.imported, report.orphaned) == (500, 0)
    assert _tool_writes(second) == []
    assert len(_tool_writes(first)) >= 1
    assert list(McpTool.objects.order_by("tool_name").values()) == before


def test_tools_gone_from_the_server_are_orphaned_and_come_back(small_catalogue_url):
    """A catalogue that shrinks orphans the missing tools; the full one brings them back."""
    server = McpServerFactory.create(identifier="sdk", url=small_catalogue_url)
    import_catalogue(server)
    with sdk_server("--stateless") as demo_only:
        server.url = demo_only
        server.save()
        report = import_catalogue(server)
    assert (report.imported, report.orphaned) == (5, 5)
    gone = set(McpTool.objects.filter(orphaned=True).values_list("remote_name", flat=True))
    assert gone == {f"generated_{i:03d}" for i in range(5)}
    server.url = small_catalogue_url
    server.save()
    report = import_catalogue(server)
    assert (report.imported, report.orphaned) == (10, 0)
    assert not McpTool.objects.filter(orphaned=True).exists()


def test_a_stateful_server_answering_in_event_streams_imports_the_same():
    """With sessions and SSE answers (the SDK's default mode) the paged walk imports alike."""
    with sdk_server("--extra-tools", "5", "--page-size", "3") as stateful:
        server = McpServerFactory.create(identifier="sse", url=stateful)
        report = import_catalogue(server)
    assert (report.ok, report.imported, report.skipped) == (True, 10, 0)
    assert McpTool.objects.filter(server=server).count() == 10


def test_more_than_500_advertised_tools_are_refused(url):
    """501 tools (over 26 pages) are refused with the count; nothing is written."""
    with sdk_server("--stateless", "--extra-tools", "496", "--page-size", "20") as big:
        server = McpServerFactory.create(identifier="big", url=big)
        report = import_catalogue(server)
    assert report.refused.startswith("the server advertises 501 tools; at most 500")
    assert not McpTool.objects.exists()


class SteppingClock:
    """A fake monotonic clock: every reading is 4 s after the previous one."""

    def __init__(self):
        self.now = 0

    def monotonic_ns(self):
        self.now += 4_000_000_000
        return self.now


def test_a_spent_budget_is_refused_as_this_installations_budget(url, settings):
    """A walk that spends its budget is refused; the reason names the budget and its setting."""
    settings.NR_LLM_MCP_OPERATION_TIMEOUT = 10
    server = McpServerFactory.create(identifier="sdk", url=url)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=SteppingClock())
    report = import_catalogue(server, client=client)
    assert "was not asked" in report.refused
    assert "budget of 10 s is spent" in report.refused
    assert report.refused.endswith("(set in NR_LLM_MCP_OPERATION_TIMEOUT)")
    assert not McpTool.objects.exists()


def test_an_unreachable_server_is_refused_and_the_catalogue_kept(small_catalogue_url):
    """Connection refused: the reason says so; what was imported before stays."""
    server = McpServerFactory.create(identifier="sdk", url=small_catalogue_url)
    import_catalogue(server)
    server.url = catalogue_peers.closed_port_url()
    server.save()
    report = import_catalogue(server)
    assert not report.ok and "sdk" in report.refused
    assert McpTool.objects.filter(server=server, orphaned=False).count() == 10
    server.refresh_from_db()
    assert (server.import_status, server.tool_count) == (ImportStatus.ERROR, 10)


def test_a_loopback_server_is_refused_without_the_allowlist(url, settings):
    """The SSRF guard applies to imports: loopback needs NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = False
    server = McpServerFactory.create(identifier="sdk", url=url)
    report = import_catalogue(server, client=mcp_client())
    assert "was not contacted" in report.refused and "private networks are not allowed" in report.refused
    assert not McpTool.objects.exists()
