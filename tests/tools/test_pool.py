"""The tool-call pool cannot deadlock or outlive a turn's budget, against the SDK server.

A nested turn (a local tool that runs a turn: an agent used as a tool) runs on its pool
thread; a turn whose calls wait for a busy pool ends at its budget with those calls taken back,
never sent (the server's own request log says so); at exit the pool lets its calls in flight
finish and drops the queued ones.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pytest
import requests
from django.db import connection

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall
from nr_llm.tools import threads
from tests.factories import McpServerFactory
from tests.peers import sdk_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def server(url: str, settings: Any) -> McpServer:
    """The demo server imported with its tools enabled, and a fresh pool of two threads."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    settings.NR_LLM_TOOL_THREADS = 2
    threads.close_pool()
    server = McpServerFactory.create(identifier="demo", name="Demo", url=url, operation_timeout=2)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


@pytest.fixture(autouse=True)
def _pool_closed_after() -> Iterator[None]:
    yield
    threads.close_pool()  # the next test's pool starts with its own size


def _calls_sent(url: str, marker: str) -> list[str]:
    """The echo texts starting with ``marker`` that reached the server."""
    log = requests.get(url.replace("/mcp", "/requests"), timeout=10).json()
    return [
        row["arguments"]["text"]
        for row in log
        if row["method"] == "tools/call"
        and isinstance(row["arguments"], dict)
        and str(row["arguments"].get("text", "")).startswith(marker)
    ]


def test_a_turn_run_by_a_local_tool_completes_with_the_pool_saturated(server: McpServer, url: str) -> None:
    """Three "agent" tools (each runs a turn of two echo calls) on a pool of two threads: both
    threads run an agent whose turn would wait for a free thread; each runs its calls in place."""

    def agent(task: str) -> str:
        results = tools.execute_many([("mcp_demo_echo", {"text": f"nested-{task}-{i}"}) for i in range(2)])
        return " ".join(result.text for result in results)

    tools.register(
        "agent", "Ask an agent.", {"type": "object", "properties": {"task": {"type": "string"}}}, agent
    )
    try:
        outcome: list[list[tools.ToolResult]] = []

        def run_turn() -> None:
            try:
                outcome.append(tools.execute_many([("agent", {"task": str(n)}) for n in range(3)]))
            finally:
                connection.close()  # this thread's, which read the turn's plan

        turn = threading.Thread(target=run_turn, daemon=True)
        turn.start()
        turn.join(60)  # a deadlock never ends: only that needs a bound
        assert not turn.is_alive(), "the nested turns deadlocked the pool"
    finally:
        tools.unregister("agent")
    [results] = outcome
    assert [r.text for r in results] == [f"nested-{n}-0 nested-{n}-1" for n in range(3)]
    assert sorted(_calls_sent(url, "nested-")) == sorted(
        f"nested-{n}-{i}" for n in range(3) for i in range(2)
    )


def test_an_async_turn_in_a_local_tool_runs_on_its_thread(server: McpServer, url: str) -> None:
    """A local tool running ``asyncio.run(aexecute_many(...))`` on a full pool completes too."""

    def agent(task: str) -> str:
        calls = [("mcp_demo_echo", {"text": f"anested-{task}-{i}"}) for i in range(2)]
        return " ".join(r.text for r in asyncio.run(tools.aexecute_many(calls)))

    tools.register(
        "agent", "Ask an agent.", {"type": "object", "properties": {"task": {"type": "string"}}}, agent
    )
    try:
        results = asyncio.run(tools.aexecute_many([("agent", {"task": str(n)}) for n in range(2)]))
    finally:
        tools.unregister("agent")
    assert [r.text for r in results] == [f"anested-{n}-0 anested-{n}-1" for n in range(2)]


def _occupy_pool(release: threading.Event) -> list[Future[None]]:
    """Both pool threads busy until ``release`` is set; returns once both hold one."""
    started = threading.Semaphore(0)

    def hold() -> None:
        started.release()
        release.wait(120)

    holders = [threads.submit(hold) for _ in range(2)]
    for _ in holders:
        assert started.acquire(timeout=30)
    return holders


@pytest.mark.parametrize("twin", ["sync", "async"])
def test_a_busy_pool_ends_a_turn_at_its_budget_with_its_calls_never_sent(
    server: McpServer, url: str, twin: str, settings: Any
) -> None:
    """Every pool thread busy for longer than the turn's 3 s budget (2 s operation budget plus
    the leg machine's second): the turn returns while they are still busy, so its calls never
    started; each says it was not sent, the server never saw them, and no row was written."""
    # The async twin reads its plan on the pool too, bounded by the installation's budget.
    settings.NR_LLM_MCP_OPERATION_TIMEOUT = 2
    release = threading.Event()
    holders = _occupy_pool(release)
    calls = [("mcp_demo_echo", {"text": f"busy-{twin}-{i}"}) for i in range(3)]
    started = time.monotonic()
    try:
        results = tools.execute_many(calls) if twin == "sync" else asyncio.run(tools.aexecute_many(calls))
        elapsed = time.monotonic() - started
        # Still held: whatever the turn did, it did not wait for a pool thread.
        assert not any(holder.done() for holder in holders)
    finally:
        release.set()
    assert elapsed >= 3.0, elapsed  # it waited its whole budget for a thread first
    for result in results:
        assert result.is_error and "time ran out before the call could start" in result.text
        assert "it was not sent" in result.text
    assert threads.pool().settle(30)  # the queued jobs reached a thread, which skipped them
    assert _calls_sent(url, f"busy-{twin}-") == []
    assert ToolCall.objects.count() == 0


def test_an_async_turns_calls_queued_behind_a_busy_pool_are_taken_back(
    server: McpServer, url: str, settings: Any
) -> None:
    """One of two threads held; the turn's plan and then its local "hold" call take the other,
    so its echo calls wait in the pool's queue past the 3 s budget: they end not sent."""
    settings.NR_LLM_MCP_OPERATION_TIMEOUT = 2
    release = threading.Event()
    started = threading.Semaphore(0)

    def hold() -> str:
        started.release()
        release.wait(120)
        return "held"

    holder = threads.submit(hold)
    assert started.acquire(timeout=30)
    tools.register("hold", "Hold a thread.", {"type": "object"}, hold)
    # Let go of both threads after the budget; the driver has taken the queued calls back by
    # then, or the thread that takes one finds the time spent: either way it is never sent.
    letting_go = threading.Timer(4.0, release.set)
    letting_go.start()
    try:
        calls: list[object] = [("hold", {}), *[("mcp_demo_echo", {"text": f"queued-{i}"}) for i in range(2)]]
        results = asyncio.run(tools.aexecute_many(calls))
    finally:
        release.set()
        letting_go.cancel()
        tools.unregister("hold")
    assert results[0].text == "held" and holder.result(timeout=30) == "held"
    for result in results[1:]:
        assert result.is_error and "time ran out before the call could start" in result.text
    assert threads.pool().settle(30)
    assert _calls_sent(url, "queued-") == []


def test_shutdown_finishes_calls_in_flight_and_drops_queued_ones(
    server: McpServer, url: str, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    """Stopping the pool (as the process's exit does): the two calls running finish and are
    recorded; the two queued are dropped, never sent; the log names both counts."""
    started = threading.Semaphore(0)

    def call(text: str) -> tools.ToolResult:
        started.release()
        return (
            tools.execute("mcp_demo_slow", {"seconds": 0.5})
            if text.startswith("run")
            else tools.execute("mcp_demo_echo", {"text": text})
        )

    running = [threads.submit(call, f"run-{i}") for i in range(2)]
    for _ in running:
        assert started.acquire(timeout=30)
    queued = [threads.submit(call, f"exit-queued-{i}") for i in range(2)]
    with caplog.at_level(logging.WARNING, logger="nr_llm.tools"):
        assert threads.stop_at_exit(grace=30) == (2, 2)
    assert [f.result(timeout=0).text for f in running] == ["slept 0.5 s", "slept 0.5 s"]
    assert all(f.cancelled() for f in queued)
    assert _calls_sent(url, "exit-queued-") == []
    assert "2 call(s) in flight were let finish (0 still running" in caplog.text
    assert "2 queued call(s) were dropped, never sent" in caplog.text
