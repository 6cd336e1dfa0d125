"""The async twins: aexecute, aresume, adefinitions; the sync API refused from a running loop;
a cancelled caller never leaves a row running nor sends a call twice.

The ledger writes on a connection of its own and the twins run on the tool-call pool's
threads, so these tests commit (``transaction=True``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import requests
from django.core.exceptions import SynchronousOnlyOperation

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.models import McpTool, ToolCall, ToolCallStatus
from tests.factories import McpServerFactory
from tests.fakes import FakeClient
from tests.governance.helpers import approver, guarded_tool, row_of
from tests.peers import sdk_server
from tests.tools.test_turn import RecordingClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("call", "twin"),
    [
        (lambda: tools.execute("mcp_guarded_echo", {"text": "x"}), "aexecute"),
        (lambda: tools.resume("00000000-0000-0000-0000-000000000000"), "aresume"),
        (lambda: tools.definitions("openai"), "adefinitions"),
    ],
)
def test_the_sync_api_in_a_running_loop_fails_loudly_naming_its_twin(call, twin):
    """In an async view the sync function raises SynchronousOnlyOperation naming the twin to
    await: not a failed tool result a model would read, and no ledger row."""
    guarded_tool(requires_approval=False)

    async def view() -> Any:
        return call()

    with pytest.raises(SynchronousOnlyOperation, match=rf"use `await tools\.{twin}\(\.\.\.\)` instead"):
        asyncio.run(view())
    assert ToolCall.objects.count() == 0


def test_django_allow_async_unsafe_lifts_the_guard(monkeypatch):
    """As for Django's own guard (a notebook): with DJANGO_ALLOW_ASYNC_UNSAFE the sync call runs
    (here one that needs no database: a call id that is none)."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    async def view() -> tools.ToolResult:
        return tools.resume("not-a-call")

    result = asyncio.run(view())
    assert result.is_error and "is not a tool call id" in result.text


def test_aexecute_returns_what_execute_returns_and_leaves_the_same_row():
    """Same arguments, same result, one row with the actor and the outcome."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    result = asyncio.run(tools.aexecute(tool.tool_name, {"text": "hi"}, client=client, actor="bot"))
    assert (result.status, result.text) == ("succeeded", "echo ran")
    row = row_of(result)
    assert (row.status, row.actor_label) == (ToolCallStatus.SUCCEEDED, "bot")
    assert client.calls == [("echo", {"text": "hi"})]


def test_aresume_runs_an_approved_call_once():
    """aexecute holds the call; approved, aresume runs it; a second aresume does not."""
    tool = guarded_tool()
    client = FakeClient()
    held = asyncio.run(tools.aexecute(tool.tool_name, {"text": "x"}, client=client))
    assert held.status == "awaiting_approval" and client.calls == []
    tools.approve(held.call_id, approver())
    first = asyncio.run(tools.aresume(held.call_id, client=client))
    again = asyncio.run(tools.aresume(held.call_id, client=client))
    assert (first.status, again.status) == ("succeeded", "succeeded")
    assert "it is not run again" in again.text
    assert client.calls == [("echo", {"text": "x"})]


def test_adefinitions_offers_what_definitions_offers():
    """The async twin reads the same catalogue, formats alike."""
    guarded_tool(requires_approval=False)
    for format in ("openai", "anthropic"):
        assert asyncio.run(tools.adefinitions(format)) == tools.definitions(format)


def test_concurrent_aexecute_calls_run_side_by_side_not_on_one_thread():
    """Four gathered aexecute calls of 0.4 s each overlap: the client sees all four at once."""
    guarded_tool(requires_approval=False)
    client = RecordingClient(seconds=0.4)

    async def turn() -> list[tools.ToolResult]:
        return await asyncio.gather(
            *(tools.aexecute("mcp_guarded_echo", {"text": str(i)}, client=client) for i in range(4))
        )

    results = asyncio.run(turn())
    assert [r.text for r in results] == [f"echo:{i}" for i in range(4)]
    assert client.peak == 4


class _Interrupting:
    """A client interrupted mid-call by something that is not an Exception (a CancelledError
    thrown into the thread, KeyboardInterrupt): the server may have received the call."""

    def __init__(self) -> None:
        self.calls = 0

    def call_tool(
        self, endpoint: Endpoint, name: str, arguments: Any = None, *, input_schema: Any = None
    ) -> CallOutcome:
        self.calls += 1
        raise asyncio.CancelledError


def test_an_interrupted_call_is_recorded_as_may_have_run_and_the_interruption_goes_on():
    """The interruption propagates (never swallowed), and the row is not left running: it says
    the call may have run."""
    tool = guarded_tool(requires_approval=False)
    client = _Interrupting()
    with pytest.raises(asyncio.CancelledError):
        tools.execute(tool.tool_name, {"text": "x"}, client=client)
    row = ToolCall.objects.get()
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, "may_have_run:interrupted")
    from nr_llm.governance import preview

    assert "may have run" in preview.preview_of(row) and "CancelledError" in preview.preview_of(row)
    assert client.calls == 1


@pytest.mark.e2e
def test_a_caller_cancelled_mid_call_leaves_no_row_running_and_never_resends(settings):
    """Against the SDK server: the caller goes away while slow(1) runs; the call ends on its
    thread, its row records the answer, and the server got exactly one tools/call."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="peer", url=url)
        assert import_catalogue(server).ok
        McpTool.objects.filter(tool_name="mcp_peer_slow").update(enabled=True)

        async def caller_goes_away() -> None:
            task = asyncio.ensure_future(tools.aexecute("mcp_peer_slow", {"seconds": 1}))
            await asyncio.sleep(0.4)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(caller_goes_away())
        assert ToolCall.objects.get().status == ToolCallStatus.RUNNING  # still on its thread
        deadline = time.monotonic() + 10
        while ToolCall.objects.filter(status=ToolCallStatus.RUNNING).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        # The row ended with the server's answer: a request sent again would have come before it.
        log = requests.get(url.replace("/mcp", "/requests"), timeout=10).json()
    row = ToolCall.objects.get()
    assert (row.status, row.error_kind) == (ToolCallStatus.SUCCEEDED, "")
    assert [entry["method"] for entry in log].count("tools/call") == 1
