"""Concurrent resumes of one approved call run it once (PostgreSQL: real threads, real row locks)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from nr_llm import tools
from nr_llm.mcp import CallOutcome
from tests.fakes import FakeClient

from .helpers import approver, guarded_tool

pytestmark = pytest.mark.django_db(transaction=True)
RESUMERS = 6


class _SlowClient(FakeClient):
    """Holds each call a moment, so the other resumers arrive while it runs."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def call_tool(self, endpoint, name, arguments=None, *, input_schema=None):
        with self._lock:
            self.calls.append((name, dict(arguments or {})))
        time.sleep(0.3)
        return CallOutcome(text="ran once", is_error=False)


def test_concurrent_resumes_run_an_approved_call_once():
    """Six threads resume at the same instant: one runs the tool, the others read its state."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrent writers need PostgreSQL; SQLite serialises them (tests/tools/test_resume.py)")
    tool = guarded_tool()
    held = tools.execute(tool.tool_name, {"text": "once"}, client=FakeClient())
    tools.approve(held.call_id, approver())
    client = _SlowClient()
    start = threading.Barrier(RESUMERS)
    results: list[tools.ToolResult] = []

    def resume() -> None:
        try:
            start.wait(timeout=10)
            results.append(tools.resume(held.call_id, client=client))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=resume) for _ in range(RESUMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert client.calls == [("echo", {"text": "once"})]
    statuses = sorted(result.status for result in results)
    assert len(results) == RESUMERS
    assert statuses.count("succeeded") >= 1 and set(statuses) <= {"succeeded", "running"}, statuses
    assert [result.text for result in results].count("ran once") == 1
