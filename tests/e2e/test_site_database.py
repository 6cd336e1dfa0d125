"""A site on this run's database and driver runs a tool call, a turn and an approval round
against the official SDK server, each call recorded once and sent once.

CI runs this file in every database job (SQLite, PostgreSQL through psycopg 3 and through
psycopg2, MariaDB; tests/test_database_driver.py proves which one a job is on). Rows are
committed as a site commits them (``transaction=True``), so the ledger's own transactions and
writer threads see what the site wrote.
"""

import pytest
import requests

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from tests.factories import McpServerFactory
from tests.governance.helpers import approver
from tests.peers import sdk_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture(scope="module")
def url():
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def server(url, settings):
    """The SDK server imported, every tool enabled."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="site", name="Site", url=url)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


def _sent(url: str, text: str) -> int:
    """How many ``tools/call`` requests carrying ``text`` the server received."""
    log = requests.get(url.replace("/mcp", "/requests"), timeout=10).json()
    return sum(
        1
        for entry in log
        if entry["method"] == "tools/call" and (entry["arguments"] or {}).get("text") == text
    )


def test_a_tool_call_answers_and_leaves_its_finished_row(server, url):
    """One call: the tool's answer, and its row succeeded and finished, sent once."""
    result = tools.execute("mcp_site_echo", {"text": "one call"}, actor="site")
    assert (result.text, result.is_error, result.status) == ("one call", False, "succeeded")
    assert result.call_id is not None
    row = ToolCall.objects.get(pk=result.call_id)
    assert (row.status, row.server_identifier, row.actor_label) == (ToolCallStatus.SUCCEEDED, "site", "site")
    assert row.started_at is not None and row.finished_at is not None
    assert _sent(url, "one call") == 1


def test_a_turn_runs_every_call_at_once_and_records_each(server, url):
    """A turn of eight calls (concurrent, on the package's threads and their connections):
    eight answers in order, eight finished rows, each call sent once."""
    calls = [("mcp_site_echo", {"text": f"turn call {n}"}) for n in range(7)] + [
        ("mcp_site_add", {"a": 2, "b": 3})
    ]
    results = tools.execute_many(calls, actor="site")
    assert [result.text for result in results] == [f"turn call {n}" for n in range(7)] + ["5.0"]
    ids = {result.call_id for result in results if result.call_id is not None}
    assert len(ids) == 8
    assert set(ToolCall.objects.filter(pk__in=ids).values_list("status", flat=True)) == {
        ToolCallStatus.SUCCEEDED
    }
    assert all(_sent(url, f"turn call {n}") == 1 for n in range(7))


def test_an_approval_round_runs_the_held_call_once(server, url):
    """A server that requires approval: the call is held and not sent; approved, the resume
    runs it; a second resume returns the recorded answer and sends nothing."""
    McpServer.objects.filter(pk=server.pk).update(requires_approval=True)
    held = tools.execute("mcp_site_echo", {"text": "held call"}, actor="site")
    assert held.status == "awaiting_approval" and held.call_id is not None
    assert _sent(url, "held call") == 0

    tools.approve(held.call_id, approver(), "fine")
    first = tools.resume(held.call_id)
    assert (first.text, first.status) == ("held call", "succeeded")
    second = tools.resume(held.call_id)
    assert second.status == "succeeded" and "it is not run again" in second.text
    assert _sent(url, "held call") == 1
    row = ToolCall.objects.get(pk=held.call_id)
    assert (row.status, row.approver_label) == (ToolCallStatus.SUCCEEDED, "approver")
