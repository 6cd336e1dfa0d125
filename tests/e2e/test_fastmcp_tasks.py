"""Task-augmented calls of fastmcp with ``fastmcp-tasks`` (SEP-2663), a peer in a virtualenv of its own.

The peer (tests/peers/fastmcp-tasks/server.py, installed by ``make peers``) speaks 2026-07-28,
declares the ``io.modelcontextprotocol/tasks`` extension in ``server/discover`` and runs
``crunch`` as a task on its in-memory docket. Its own request log (``MCP_REQUEST_LOG``) shows
what it was sent.

In that era a tool's listing carries no ``execution.taskSupport`` (the 2026-07-28 Tool has no
``execution``; the server decides per call), so the catalogue keeps ``task_support`` empty: a
worker sends such a call with the whole queued budget and, once the server answers with a task,
follows it in slices under the row's task lease (nr_llm/tools/worker.py), so a worker killed
between polls is replaced when its lease passes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nr_llm import tools
from nr_llm.catalogue import enable_tools, import_catalogue
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.protocol.tasks import TaskError, TaskOptions, TaskState
from nr_llm.models import DataClass, McpTool
from tests.e2e.test_import_workers import wait_for, workers
from tests.e2e.test_queued_calls_workers import SQLITE, _task_results, shared_database
from tests.factories import McpServerFactory
from tests.peers import ROOT, running

__all__ = ["shared_database"]  # the fixture, shared with the other worker tests

pytestmark = pytest.mark.e2e

PEER = ROOT / "tests" / "peers" / "fastmcp-tasks"
PYTHON = PEER / ".venv" / "bin" / "python"
TOOL = "crunch"


def _methods(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["method"] for line in log.read_text().splitlines() if line]


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The peer's /mcp URL and its request log."""
    if not PYTHON.exists():
        pytest.fail("the fastmcp-tasks peer is not installed: run `make peers`")
    log = tmp_path / "requests.jsonl"
    with running([str(PYTHON), str(PEER / "server.py")], env={"MCP_REQUEST_LOG": str(log)}) as port:
        yield f"http://127.0.0.1:{port}/mcp", log


def _endpoint(url: str, budget: float) -> Endpoint:
    return Endpoint(identifier="fastmcp-tasks", url=url, budget_seconds=budget)


def test_a_task_call_completes(peer: tuple[str, Path]) -> None:
    url, log = peer
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    [listed] = client.list_tools(_endpoint(url, 10))
    assert listed["name"] == TOOL and "execution" not in listed
    states: list[TaskState] = []
    outcome = client.call_tool(
        _endpoint(url, 20),
        TOOL,
        {"dataset": "tides", "seconds": 1.5},
        task=TaskOptions(on_state=states.append),
    )
    assert not outcome.is_error and "crunched tides in 1.5 s" in outcome.text
    assert outcome.era == "modern" and outcome.task is not None and outcome.task.status == "completed"
    assert states[0].status == "working" and states[0].poll_interval_ms == 500
    methods = _methods(log)
    assert methods.count("tools/call") == 1 and methods.count("tasks/get") >= 2, methods


def test_the_task_survives_a_process_restart_between_polls(peer: tuple[str, Path]) -> None:
    """One process asks and is cut off by its budget with the task still working; another
    process resumes from the stored state alone and reads the result."""
    url, log = peer
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    kept: list[dict[str, Any]] = []
    with pytest.raises(TaskError) as raised:
        client.call_tool(
            _endpoint(url, 2),
            TOOL,
            {"dataset": "restarts", "seconds": 4},
            task=TaskOptions(on_state=lambda state: kept.append(state.as_dict())),
        )
    assert raised.value.kind == "task_pending" and kept[-1]["status"] == "working"
    polled = _methods(log).count("tasks/get")
    assert polled >= 1
    resume = (
        "import json, sys\n"
        "from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient\n"
        "from nr_llm.mcp.protocol.tasks import TaskState\n"
        "state = TaskState.from_dict(json.load(sys.stdin))\n"
        f"endpoint = Endpoint(identifier='fastmcp-tasks', url={url!r}, budget_seconds=20)\n"
        "client = McpClient(connection=ConnectionSettings(allow_private_networks=True))\n"
        f"outcome = client.poll_task(endpoint, state, {TOOL!r})\n"
        "print(json.dumps({'text': outcome.text, 'status': outcome.task.status}))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", resume],
        input=json.dumps(kept[-1]),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    answer = json.loads(finished.stdout)
    assert answer["status"] == "completed" and "crunched restarts in 4 s" in answer["text"]
    methods = _methods(log)
    assert methods.count("tools/call") == 1 and methods.count("tasks/get") > polled, methods


# On PostgreSQL the workers must see the rows this process commits (as in the harness's module).
@pytest.mark.django_db(transaction=True) if not SQLITE else pytest.mark.e2e
def test_a_queued_task_survives_a_worker_killed_between_polls(
    shared_database, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """As tests/e2e/test_queued_tasks_workers.py with server-everything: the call is sent once;
    the worker following its task dies; another worker resumes the task from the row."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    # Asked for here: on SQLite the test runs again in a process of its own, which starts its own.
    url, log = request.getfixturevalue("peer")
    server = McpServerFactory.create(identifier="fastmcp-tasks", url=url, data_class=DataClass.PUBLIC_CONTENT)
    assert import_catalogue(server).ok
    tool = McpTool.objects.get(server=server, remote_name=TOOL)
    enable_tools([tool.pk])
    call = tools.enqueue(tool.tool_name, {"dataset": "restarts", "seconds": 8})
    pk = call.call_id
    assert call.status == "queued" and pk is not None
    with workers(2, tmp_path, "tests.worker_task_settings", DATABASE_URL=shared_database) as processes:
        row = wait_for(
            lambda: ToolCall.objects.filter(pk=pk, task_state__isnull=False).first(),
            "the task created and kept on the row",
            tmp_path,
        )
        wait_for(lambda: "tasks/get" in _methods(log), "the task polled once", tmp_path)
        [sender] = _task_results().filter(status="RUNNING")
        [worker_id] = sender.worker_ids
        processes[worker_id].send_signal(signal.SIGKILL)
        processes[worker_id].wait(timeout=10)
        assert row.status == ToolCallStatus.RUNNING and row.task_state["status"] == "working"
        assert _methods(log).count("tools/call") == 1
        wait_for(
            lambda: tools.result(call.call_id).status == "succeeded", "the task resumed and read", tmp_path
        )
    assert "crunched restarts in 8 s" in tools.result(call.call_id).text
    finisher = [r for r in _task_results() if r.return_value and r.return_value["status"] == "succeeded"]
    assert len(finisher) == 1 and finisher[0].worker_ids != [worker_id]
    methods = _methods(log)
    assert methods.count("tools/call") == 1 and methods.count("tasks/get") >= 2, methods
