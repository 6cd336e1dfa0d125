"""execute_many / aexecute_many: a model turn's calls side by side, under caps, results in order.

The scheduling tests use a recording client (it counts overlapping calls, which no real server
reports); what a real server does with a turn is in test_asgi_views.py (an async view under
uvicorn) and tests/test_readme_turn.py (the README's view and its async twin), both against the
official SDK server. The ledger writes on
its own connection, so these tests commit (``transaction=True``).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import types
from collections import Counter
from typing import Any

import pytest
from pydantic import BaseModel

from nr_llm import tools
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from nr_llm.tools import threads
from tests.factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db(transaction=True)
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


class RecordingClient:
    """``call_tool`` as McpClient has it: sleeps ``seconds`` (longer for the remote names in
    ``slow``) and records which calls overlapped."""

    def __init__(self, seconds: float = 0.2, slow: dict[str, float] | None = None) -> None:
        self.seconds = seconds
        self.slow = slow or {}
        self._lock = threading.Lock()
        self.running: Counter[str] = Counter()
        self.peak = 0
        self.peak_per_server: Counter[str] = Counter()
        #: (remote name, arguments, start, end) of every call, in the order they ended.
        self.calls: list[tuple[str, dict[str, Any], float, float]] = []

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
    ) -> CallOutcome:
        start = time.monotonic()
        with self._lock:
            self.running[endpoint.identifier] += 1
            self.peak = max(self.peak, sum(self.running.values()))
            self.peak_per_server[endpoint.identifier] = max(
                self.peak_per_server[endpoint.identifier], self.running[endpoint.identifier]
            )
        time.sleep(self.slow.get(name, self.seconds))
        with self._lock:
            self.running[endpoint.identifier] -= 1
            self.calls.append((name, dict(arguments or {}), start, time.monotonic()))
        if name == "fail":
            return CallOutcome(text="it failed", is_error=True, era="modern")
        return CallOutcome(text=f"{name}:{(arguments or {}).get('text', '')}", is_error=False, era="modern")


def _tools(identifier: str, *names: str, **server: Any) -> McpServer:
    row = McpServerFactory.create(identifier=identifier, **server)
    for name in names:
        McpToolFactory.create(server=row, remote_name=name, enabled=True, input_schema=SCHEMA)
    return row


def test_results_come_back_in_the_calls_order_and_the_calls_overlap():
    """Four calls to one server overlap (the client sees all four at once), and result i is call i's."""
    _tools("docs", "a", "b", "c", "d")
    client = RecordingClient(seconds=0.3, slow={"a": 0.6})
    calls = [(f"mcp_docs_{name}", {"text": name}) for name in "abcd"]
    results = tools.execute_many(calls, client=client, actor="bot")
    assert [r.text for r in results] == ["a:a", "b:b", "c:c", "d:d"]
    assert client.peak == 4
    rows = ToolCall.objects.filter(pk__in=[r.call_id for r in results])
    assert sorted(row.status for row in rows) == [ToolCallStatus.SUCCEEDED] * 4
    assert {row.actor_label for row in rows} == {"bot"}


@pytest.mark.parametrize("field", [None, 2])
def test_calls_to_one_server_are_bounded_by_its_cap(settings, field):
    """Six calls to one server: at most the server's own cap at once when it has one, else
    NR_LLM_TOOL_CONCURRENCY_PER_SERVER; every call still runs."""
    settings.NR_LLM_TOOL_CONCURRENCY_PER_SERVER = 3
    _tools("docs", "a", max_concurrent_calls=field)
    client = RecordingClient(seconds=0.1)
    results = tools.execute_many([("mcp_docs_a", {"text": str(i)}) for i in range(6)], client=client)
    assert [r.text for r in results] == [f"a:{i}" for i in range(6)]
    assert client.peak_per_server["docs"] == (field or 3)


def test_the_overall_cap_bounds_calls_to_all_servers(settings):
    """Three servers, two calls each, NR_LLM_TURN_CONCURRENCY 4: never more than four at once."""
    settings.NR_LLM_TURN_CONCURRENCY = 4
    for identifier in ("one", "two", "three"):
        _tools(identifier, "a")
    client = RecordingClient(seconds=0.15)
    servers = ("one", "two", "three")
    calls: list[object] = [(f"mcp_{identifier}_a", {}) for identifier in servers for _ in range(2)]
    results = tools.execute_many(calls, client=client)
    assert all(not r.is_error for r in results)
    assert client.peak == 4


def test_a_run_alone_tool_runs_after_the_others_one_at_a_time():
    """Tools marked "run alone" wait for the concurrent ones and never overlap anything."""
    server = _tools("docs", "read", "write")
    McpTool.objects.filter(server=server, remote_name="write").update(run_alone=True)
    client = RecordingClient(seconds=0.15)
    calls: list[object] = [
        ("mcp_docs_write", {"text": "1"}),
        ("mcp_docs_read", {"text": "2"}),
        ("mcp_docs_write", {"text": "3"}),
        ("mcp_docs_read", {"text": "4"}),
    ]
    results = tools.execute_many(calls, client=client)
    assert [r.text for r in results] == ["write:1", "read:2", "write:3", "read:4"]
    reads = [c for c in client.calls if c[0] == "read"]
    writes = [c for c in client.calls if c[0] == "write"]
    assert [c[1]["text"] for c in writes] == ["1", "3"]
    assert min(w[2] for w in writes) >= max(r[3] for r in reads)
    assert writes[1][2] >= writes[0][3]


def test_a_server_that_runs_its_writes_alone_keeps_read_only_tools_concurrent():
    """With run_writes_alone, a tool annotated readOnlyHint runs alongside; one that is not
    (no annotation, or readOnlyHint false) runs alone after."""
    server = _tools("docs", "read", "unsure", "write", run_writes_alone=True)
    McpTool.objects.filter(server=server, remote_name="read").update(
        remote_annotations={"readOnlyHint": True}
    )
    McpTool.objects.filter(server=server, remote_name="write").update(
        remote_annotations={"readOnlyHint": False, "destructiveHint": True}
    )
    client = RecordingClient(seconds=0.15)
    calls: list[object] = [
        ("mcp_docs_write", {}),
        ("mcp_docs_unsure", {}),
        ("mcp_docs_read", {}),
        ("mcp_docs_read", {}),
    ]
    tools.execute_many(calls, client=client)
    assert [c[0] for c in client.calls][-2:] == ["write", "unsure"]
    assert client.peak == 2  # the two reads together; the others alone


def test_one_failing_call_cancels_nothing_else():
    """A tool error, an unknown tool and a refused call each get their own result; the others run."""
    _tools("docs", "a", "fail")
    client = RecordingClient(seconds=0.05)
    calls: list[object] = [
        ("mcp_docs_fail", {}),
        ("no_such_tool", {}),
        ("mcp_docs_a", {"text": "x"}),
        ("mcp_docs_a", [1]),
    ]
    results = tools.execute_many(calls, client=client)
    assert [r.status for r in results] == ["failed", "failed", "succeeded", "failed"]
    assert "reported an error: it failed" in results[0].text
    assert "unknown tool 'no_such_tool'" in results[1].text
    assert results[2].text == "a:x"
    assert "must be a JSON object, not an array" in results[3].text
    assert sorted(c[0] for c in client.calls) == ["a", "fail"]


def test_the_providers_tool_call_objects_are_read_with_their_ids():
    """OpenAI Chat Completions (dict and SDK-like object), Responses, Anthropic (pydantic): each
    runs with its arguments, in order."""
    _tools("docs", "a")

    class ToolUse(BaseModel):
        type: str
        id: str
        name: str
        input: dict[str, Any]

    calls: list[object] = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "mcp_docs_a", "arguments": '{"text":"chat"}'},
        },
        types.SimpleNamespace(
            id="call_2",
            type="function",
            function=types.SimpleNamespace(name="mcp_docs_a", arguments='{"text": "object"}'),
        ),
        {
            "type": "function_call",
            "call_id": "fc_3",
            "name": "mcp_docs_a",
            "arguments": '{"text":"responses"}',
        },
        ToolUse(type="tool_use", id="toolu_4", name="mcp_docs_a", input={"text": "anthropic"}),
    ]
    results = tools.execute_many(calls, client=RecordingClient(seconds=0.01))
    assert [r.text for r in results] == ["a:chat", "a:object", "a:responses", "a:anthropic"]
    # Each result carries its call's provider id, distinct from its ledger row's id.
    assert [r.tool_call_id for r in results] == ["call_1", "call_2", "fc_3", "toolu_4"]
    assert all(r.call_id is not None and str(r.call_id) != r.tool_call_id for r in results)
    items = tools.tool_messages("openai-responses", results)
    assert [item["call_id"] for item in items] == ["call_1", "call_2", "fc_3", "toolu_4"]


def test_bad_calls_each_get_a_result_in_order():
    """A duplicate call id runs once; a name that is not a string, arguments that are not JSON
    and something that is no tool call at all are refused, each in its place."""
    _tools("docs", "a")
    client = RecordingClient(seconds=0.01)
    chat = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "mcp_docs_a", "arguments": '{"text":"1"}'},
    }
    calls = [
        chat,
        dict(chat),
        {"id": "call_2", "type": "function", "function": {"name": ["mcp_docs_a"], "arguments": "{}"}},
        {"id": "call_3", "type": "function", "function": {"name": "mcp_docs_a", "arguments": "{not json"}},
        42,
    ]
    results = tools.execute_many(calls, client=client)
    assert len(results) == 5 and all(r.is_error for r in results[1:])
    assert results[0].text == "a:1"
    assert "call id 'call_1' appears more than once" in results[1].text
    assert "unknown tool" in results[2].text
    assert "int is not a tool call" in results[4].text
    assert [c[1] for c in client.calls] == [{"text": "1"}]
    # The known tool's malformed call is recorded under its server, and the model is told plainly.
    assert results[3].server == "docs" and "are not valid JSON" in results[3].text
    assert ToolCall.objects.get(pk=str(results[3].call_id)).server_identifier == "docs"
    # Every call gets its answer under its own id, refused ones included (a provider refuses a
    # turn in which a call has none); what is no tool call has no id to answer.
    assert [r.tool_call_id for r in results] == ["call_1", "call_1", "call_2", "call_3", None]


def test_arguments_cut_off_mid_json_are_said_to_be_cut_off():
    """A model that ran out of output tokens sent half a JSON text: it is told so, not "must be an
    object", and the call is recorded under the tool's server."""
    _tools("docs", "a")
    client = RecordingClient(seconds=0.01)
    cut = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "mcp_docs_a", "arguments": '{"text": "a long'},
    }
    [result] = tools.execute_many([cut], client=client)
    assert result.text.startswith("arguments for 'mcp_docs_a' were cut off: their JSON text ends")
    assert "must be" not in result.text and client.calls == []
    row = ToolCall.objects.get(pk=str(result.call_id))
    assert (row.server_identifier, row.error_kind) == ("docs", "invalid_arguments")


def test_a_turn_over_the_cap_answers_every_call_under_its_id(settings):
    settings.NR_LLM_TURN_MAX_CALLS = 1
    calls: list[object] = [
        ("x", {}),
        {"id": "call_9", "type": "function", "function": {"name": "x", "arguments": "{}"}},
    ]
    results = tools.execute_many(calls)
    assert [r.tool_call_id for r in results] == [None, "call_9"]


def test_a_turn_above_the_cap_runs_nothing_and_says_why(settings, caplog):
    """200 calls against a cap of 32: 200 failed results naming the cap, no call sent, no row."""
    _tools("docs", "a")
    client = RecordingClient(seconds=0.01)
    results = tools.execute_many([("mcp_docs_a", {})] * 200, client=client)
    assert len(results) == 200 and {r.status for r in results} == {"failed"}
    assert "asked for 200 tool calls, more than the 32" in results[0].text
    assert "NR_LLM_TURN_MAX_CALLS" in results[0].text
    assert client.calls == [] and ToolCall.objects.count() == 0
    assert "a turn of 200 tool calls was refused" in caplog.text


def test_an_approval_tool_in_a_turn_is_held_and_never_contacted():
    """Approval, ceiling and ledger are execute()'s per call: the guarded call awaits approval."""
    _tools("docs", "a")
    _tools("guarded", "a", requires_approval=True)
    client = RecordingClient(seconds=0.01)
    results = tools.execute_many([("mcp_guarded_a", {}), ("mcp_docs_a", {})], client=client)
    assert [r.status for r in results] == ["awaiting_approval", "succeeded"]
    assert [c[0] for c in client.calls] == ["a"]
    assert ToolCall.objects.get(pk=str(results[0].call_id)).status == ToolCallStatus.AWAITING_APPROVAL


def test_a_call_that_cannot_start_within_the_turns_budget_is_not_sent(settings):
    """Cap 1 and a 1 s budget: the first call takes 2 s, so the second could only start after the
    turn's time; it is not sent, and says so."""
    settings.NR_LLM_TOOL_CONCURRENCY_PER_SERVER = 1
    _tools("docs", "long", "short", operation_timeout=1)
    client = RecordingClient(seconds=0.01, slow={"long": 2.2})
    results = tools.execute_many([("mcp_docs_long", {}), ("mcp_docs_short", {})], client=client)
    assert not results[0].is_error
    assert results[1].is_error and "time ran out before the call could start" in results[1].text
    assert [c[0] for c in client.calls] == ["long"]


def test_the_sync_turn_from_a_running_loop_names_its_async_twin():
    """execute_many in an async function raises SynchronousOnlyOperation naming aexecute_many."""
    from django.core.exceptions import SynchronousOnlyOperation

    async def view() -> None:
        tools.execute_many([("x", {})])

    with pytest.raises(SynchronousOnlyOperation, match=r"await tools\.aexecute_many"):
        asyncio.run(view())


def test_the_async_turn_runs_its_calls_together():
    """aexecute_many: the same results, in order, the calls overlapping."""
    _tools("docs", "a")
    client = RecordingClient(seconds=0.3)
    results = asyncio.run(
        tools.aexecute_many([("mcp_docs_a", {"text": str(i)}) for i in range(4)], client=client)
    )
    assert [r.text for r in results] == [f"a:{i}" for i in range(4)]
    assert client.peak == 4


def test_a_cancelled_async_turn_starts_nothing_more_and_leaves_no_row_running(settings):
    """Cancelled while its first call runs (cap 1): the call ends on its thread and records its
    outcome; the queued ones are never sent."""
    settings.NR_LLM_TOOL_CONCURRENCY_PER_SERVER = 1
    _tools("docs", "a")
    client = RecordingClient(seconds=0.5)

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(
            tools.aexecute_many([("mcp_docs_a", {"text": str(i)}) for i in range(3)], client=client)
        )
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())
    deadline = time.monotonic() + 5
    while ToolCall.objects.filter(status=ToolCallStatus.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # Every job handed to the pool has ended: a queued call that was to be sent would have been.
    assert threads.pool().settle(30)
    assert [c[1] for c in client.calls] == [{"text": "0"}]
    assert list(ToolCall.objects.values_list("status", flat=True)) == [ToolCallStatus.SUCCEEDED]


def test_arguments_the_turn_reads_reach_the_ledger_as_execute_records_them():
    """The JSON text of a provider's call is the arguments the row's digest binds."""
    from nr_llm.governance import ledger

    _tools("docs", "a")
    call = {"id": "c", "type": "function", "function": {"name": "mcp_docs_a", "arguments": '{"text": "é"}'}}
    [result] = tools.execute_many([call], client=RecordingClient(seconds=0.01))
    row = ToolCall.objects.get(pk=str(result.call_id))
    assert row.arguments_digest == ledger.digest_of(
        json.dumps({"text": "é"}, separators=(",", ":"), ensure_ascii=False)
    )


def test_calls_that_start_at_once_reuse_the_rows_the_plan_read(monkeypatch):
    """The plan read the catalogue once: the calls starting with it read no row of their own."""
    from nr_llm.tools import execution, lookup

    _tools("reads", "a", "b", "c")
    reads: list[str] = []
    real = lookup.tool_by_name

    def counted(name: str) -> Any:
        reads.append(name)
        return real(name)

    monkeypatch.setattr(execution, "tool_by_name", counted)
    results = tools.execute_many(
        [(f"mcp_reads_{n}", {"text": n}) for n in "abc"], client=RecordingClient(0.05)
    )
    assert [r.text for r in results] == ["a:a", "b:b", "c:c"]
    assert reads == []


def test_a_call_that_waited_for_its_place_reads_its_row_anew(settings, monkeypatch):
    """An operator's change made while a call waited (here: the tool disabled) reaches it, as it
    would reach an execute() made then: the plan's row is not used past its freshness."""
    from nr_llm.tools import turn

    settings.NR_LLM_TOOL_CONCURRENCY_PER_SERVER = 1
    monkeypatch.setattr(turn, "PLANNED_ROW_SECONDS", 0.1)
    _tools("waits", "first", "second")

    class Disabling(RecordingClient):
        def call_tool(self, endpoint: Endpoint, name: str, *args: Any, **kwargs: Any) -> CallOutcome:
            outcome = super().call_tool(endpoint, name, *args, **kwargs)
            McpTool.objects.filter(tool_name="mcp_waits_second").update(enabled=False)
            return outcome

    first, second = tools.execute_many(
        [("mcp_waits_first", {"text": "1"}), ("mcp_waits_second", {"text": "2"})], client=Disabling(0.3)
    )
    assert (first.is_error, first.text) == (False, "first:1")
    assert second.is_error and "is disabled" in second.text
