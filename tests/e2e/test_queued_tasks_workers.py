"""A task-augmented call of server-everything on real ``db_worker`` processes, through a restart.

server-everything's ``simulate-research-query`` lists ``execution.taskSupport: "required"`` and
runs four one-second stages as a 2025-11-25 task. The catalogue import keeps that, ``enqueue``
queues the call, a worker sends it and follows the task in slices (tests/worker_task_settings.py);
the worker that sent it is SIGKILLed while it polls, and the delivery scheduled for the end of
its lease, taken by the other worker, resumes from the row. The server's own request log
(tests/e2e/peers/request_log.cjs) shows the call was sent once.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from nr_llm import tools
from nr_llm.catalogue import enable_tools, import_catalogue
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.models import DataClass, McpTool
from tests.e2e.test_import_workers import wait_for, workers
from tests.e2e.test_mcp_server_everything import EVERYTHING, PEERS
from tests.e2e.test_queued_calls_workers import SQLITE, _task_results, shared_database
from tests.factories import McpServerFactory
from tests.peers import running

__all__ = ["shared_database"]  # the fixture, shared with the other worker tests

pytestmark = [pytest.mark.e2e] if SQLITE else [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TOOL = "simulate-research-query"


def _methods(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["method"] for line in log.read_text().splitlines() if line]


def test_a_task_survives_a_worker_killed_between_polls(shared_database, tmp_path, monkeypatch):
    """The call is sent once; the worker following its task dies; another worker resumes the
    task from the row and records the server's report."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("MCP_REQUEST_LOG", str(log))
    preloads = ["-r", str(PEERS / "loopback.cjs"), "-r", str(PEERS / "request_log.cjs")]
    with running(["node", *preloads, str(EVERYTHING), "streamableHttp"]) as port:
        server = McpServerFactory.create(
            identifier="everything", url=f"http://127.0.0.1:{port}/mcp", data_class=DataClass.PUBLIC_CONTENT
        )
        assert import_catalogue(server).ok
        tool = McpTool.objects.get(server=server, remote_name=TOOL)
        assert tool.task_support == "required"
        enable_tools([tool.pk])
        call = tools.enqueue(tool.tool_name, {"topic": "restarts"})
        pk = call.call_id
        assert call.status == "queued" and pk is not None
        with workers(2, tmp_path, "tests.worker_task_settings", DATABASE_URL=shared_database) as processes:
            row = wait_for(
                lambda: ToolCall.objects.filter(pk=pk, task_state__isnull=False).first(),
                "the task created and kept on the row",
                tmp_path,
            )
            # Between polls: the sender has polled the task once, and is waiting for the next.
            wait_for(lambda: "tasks/get" in _methods(log), "the task polled once", tmp_path)
            # The delivery that sent the call, still following the task (its watchdog waits).
            [sender] = _task_results().filter(status="RUNNING")
            [worker_id] = sender.worker_ids
            processes[worker_id].send_signal(signal.SIGKILL)
            processes[worker_id].wait(timeout=10)
            assert row.status == ToolCallStatus.RUNNING and row.task_state["status"] == "working"
            assert _methods(log).count("tools/call") == 1

            wait_for(
                lambda: tools.result(call.call_id).status == "succeeded",
                "the task resumed and read",
                tmp_path,
            )
        ended = tools.result(call.call_id)
        assert "# Research Report: restarts" in ended.text
        finisher = [r for r in _task_results() if r.return_value and r.return_value["status"] == "succeeded"]
        assert len(finisher) == 1 and finisher[0].worker_ids != [worker_id]
        methods = _methods(log)
        assert methods.count("tools/call") == 1 and methods.count("tasks/result") == 1
        assert methods.count("tasks/get") >= 2, methods  # polled before the kill and after the resume
