"""What a model and the ledger are told of a call: true, against real servers (issue 25, items 1, 3).

"Could not run" only when nothing was sent or the server's answer proves it refused before
running; every other failure of a written call "may have run", in the model's text, in the
ledger's error kind and in what a second resume says. Text a server sends that UTF-8 cannot
carry never strands a ledger row, and arguments that cannot be encoded are refused, recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import responses
from django.db import connection

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.governance import decisions, ledger, preview
from nr_llm.mcp import ConnectionSettings, McpClient
from nr_llm.mcp.protocol import eras
from nr_llm.mcp.protocol.eras import EraCache
from nr_llm.models import McpServer, McpTool
from tests.factories import McpServerFactory
from tests.fakes import FakeClient
from tests.governance.helpers import approver, guarded_tool, row_of
from tests.mcp.scripted import URL, FakeClock, ScriptedServer
from tests.peers import sdk_server

pytestmark = pytest.mark.django_db(transaction=True)

JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
def era_cache(monkeypatch: pytest.MonkeyPatch) -> EraCache:
    """A process era cache of the test's own: a remembered era never leaks between tests."""
    cache = EraCache()
    monkeypatch.setattr(eras, "_PROCESS_CACHE", cache)
    return cache


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mocked:
        yield mocked


def _scripted(mock: responses.RequestsMock, **script: object) -> tuple[ScriptedServer, McpClient]:
    """The scripted server at URL (a handshake-era server), a tool of it and a client for it."""
    clock = FakeClock()
    server = ScriptedServer(clock, **script)  # type: ignore[arg-type]
    server.install(mock)
    guarded_tool(requires_approval=False, url=URL)
    return server, McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)


def _error(code: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": code, "message": "it went wrong"}})


MAY_HAVE_RUN = "MCP server \"Guarded server\" (guarded) may have run 'echo'"
COULD_NOT_RUN = "MCP server \"Guarded server\" (guarded) could not run 'echo'"


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        ((502, {}, "Bad Gateway"), "status"),
        ((504, {}, "Gateway Timeout"), "status"),
        ((200, JSON, _error(-32603)), "rpc_error"),
        ((200, JSON, _error(-32602)), "rpc_error"),
    ],
    ids=["502", "504", "rpc-32603", "rpc-32602-on-200"],
)
def test_an_answer_that_proves_nothing_tells_the_model_and_the_ledger_it_may_have_run(mock, answer, kind):
    """A gateway's 502/504, or any JSON-RPC error on a 2xx answer (the server took the call: even
    -32602 can come after the tool started, issue 25 item 2), comes after the call was written:
    the model reads "may have run" and to check before retrying, the row records
    may_have_run:<kind>, and the call went to the server once."""
    server, client = _scripted(mock, overrides={"tools/call": answer})
    result = tools.execute("mcp_guarded_echo", {"text": "x"}, client=client)
    assert result.is_error and result.text.startswith(MAY_HAVE_RUN), result.text
    assert "check its effect before calling it again" in result.text and "could not run" not in result.text
    row = row_of(result)
    assert (row.status, row.error_kind) == ("failed", f"may_have_run:{kind}")
    assert ledger.may_have_run(row)
    assert server.methods.count("tools/call") == 1


@pytest.mark.parametrize(
    ("answer", "kind"),
    [((422, {}, ""), "status")],
    ids=["422"],
)
def test_a_refusal_the_server_proves_is_could_not_run(mock, answer, kind):
    """A 4xx status line proves the tool did not run: "could not run", and the row's error kind
    is the plain kind."""
    _, client = _scripted(mock, overrides={"tools/call": answer})
    result = tools.execute("mcp_guarded_echo", {"text": "x"}, client=client)
    assert result.is_error and result.text.startswith(COULD_NOT_RUN), result.text
    row = row_of(result)
    assert (row.status, row.error_kind) == ("failed", kind) and not ledger.may_have_run(row)


def test_a_failure_before_the_call_was_sent_could_not_run(mock):
    """The handshake's initialize answered 502: the tools/call was never written, so the model
    reads "could not run", the row keeps the plain kind, and the server saw no tools/call."""
    server, client = _scripted(mock, overrides={"initialize": (502, {}, "Bad Gateway")})
    result = tools.execute("mcp_guarded_echo", {"text": "x"}, client=client)
    assert result.text.startswith(COULD_NOT_RUN), result.text
    assert row_of(result).error_kind == "status" and "tools/call" not in server.methods


# -- the official SDK server --------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def demo(sdk_url, settings) -> McpServer:
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="demo", name="Demo", url=sdk_url)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


@pytest.mark.e2e
def test_a_call_that_times_out_before_its_answer_may_have_run_on_the_sdk_server(demo):
    """The SDK server's slow tool outlives a 2 s budget: the call was written and no status line
    came, so the model reads "may have run", and so does the ledger row."""
    McpServer.objects.filter(pk=demo.pk).update(operation_timeout=2)
    result = tools.execute("mcp_demo_slow", {"seconds": 5})
    assert result.is_error, result.text
    assert result.text.startswith("MCP server \"Demo\" (demo) may have run 'slow'"), result.text
    assert "check its effect before calling it again" in result.text
    assert row_of(result).error_kind == "may_have_run:timeout"


@pytest.mark.e2e
def test_a_call_never_sent_for_want_of_budget_could_not_run_on_the_sdk_server(demo):
    """With a 1 s budget the handshake leaves less than a leg's floor: the call is never sent,
    and "could not run" is true."""
    McpServer.objects.filter(pk=demo.pk).update(operation_timeout=1)
    result = tools.execute("mcp_demo_slow", {"seconds": 5})
    assert result.text.startswith("MCP server \"Demo\" (demo) could not run 'slow'"), result.text
    assert row_of(result).error_kind == "deadline_exhausted"


@pytest.mark.e2e
def test_a_resume_of_an_approved_call_that_timed_out_says_it_may_have_run(demo):
    """resume() decides with the same rule: its result and a second resume say "may have run",
    never "already ran (failed)", and nothing is sent twice."""
    McpServer.objects.filter(pk=demo.pk).update(operation_timeout=2, requires_approval=True)
    held = tools.execute("mcp_demo_slow", {"seconds": 5})
    decisions.approve(held.call_id, approver())
    first = tools.resume(held.call_id)
    assert "may have run 'slow'" in first.text, first.text
    again = tools.resume(held.call_id)
    assert "may have run" in again.text and "already ran" not in again.text
    assert row_of(again).error_kind == "may_have_run:timeout"


# -- item 3: text Python cannot encode --------------------------------------------------------


def test_a_lone_surrogate_in_an_answer_is_replaced_and_the_row_ends(mock):
    """A server cutting a string mid-emoji (JSON's lone \\ud83d escape) is answered: the model
    reads U+FFFD in its place, the row ends succeeded with the answer kept, never 'running'."""
    cut = {"content": [{"type": "text", "text": "half an emoji: \ud83d!"}]}
    _, client = _scripted(mock, call_result=cut)
    result = tools.execute("mcp_guarded_echo", {"text": "x"}, client=client)
    assert (result.is_error, result.text) == (False, "half an emoji: \ufffd!")
    row = row_of(result)
    assert row.status == "succeeded" and preview.preview_of(row) == "half an emoji: \ufffd!"
    result.text.encode()


def test_arguments_holding_a_lone_surrogate_are_refused_and_recorded():
    """Arguments no server could read are refused with a reason a model can act on, in a
    failed row of their own; nothing is sent."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    result = tools.execute(tool.tool_name, {"text": "cut \ud83d"}, client=client)
    assert result.is_error and "must be valid Unicode text" in result.text and "\\ud83d" in result.text
    row = row_of(result)
    assert (row.status, row.error_kind, row.arguments_digest) == ("failed", "invalid_arguments", "")
    assert client.calls == []


def test_an_outcome_whose_answer_cannot_be_kept_still_ends_the_row(monkeypatch):
    """Whatever fails in keeping the answer (here its encryption), the row ends with what is
    known: succeeded, its duration and era, no answer kept."""
    tool = guarded_tool(requires_approval=False)

    def refuse(text: str, structured: object = None) -> str:
        raise ValueError("cannot encrypt this")

    monkeypatch.setattr(preview, "preview", refuse)
    result = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
    row = row_of(result)
    assert (row.status, row.era, row.result_preview_ciphertext) == ("succeeded", "modern", "")
    assert row.finished_at is not None and row.duration_ms is not None


def test_an_outcome_the_database_refuses_with_its_answer_is_recorded_without_it(monkeypatch):
    """When the database refuses the outcome's write (PostgreSQL refuses a NUL in text), the
    outcome is written again without the kept answer: the row never stays 'running'."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite stores a NUL in text; PostgreSQL refuses it (run with DATABASE_URL=postgres://…)")
    tool = guarded_tool(requires_approval=False)
    monkeypatch.setattr(preview, "preview", lambda text, structured=None: "refused\x00" if text else "")
    result = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
    row = row_of(result)
    assert (row.status, row.result_preview_ciphertext) == ("succeeded", "")
    assert result.text == "echo ran"
