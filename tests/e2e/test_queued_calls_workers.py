"""Tool calls on real workers: two django-tasks-db ``db_worker`` processes, on PostgreSQL and SQLite.

The site side (``tools.enqueue``, approvals, the reaper) runs in this process; the workers are
``manage.py db_worker`` processes (tests/worker_settings.py) on the same database: PostgreSQL's
test database, or for SQLite a file (the suite's in-memory database is this process's alone).
The MCP peers are the official SDK server (its /requests log shows every tools/call it was sent)
and server-everything (its long-running tool reports progress).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import connection

from nr_llm import tools
from nr_llm.governance import reaper
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.mcp.protocol.progress import Progress
from nr_llm.models import DataClass, McpTool
from nr_llm.tools import ToolResult
from nr_llm.tools.worker import run_tool_call
from tests.e2e.test_import_workers import _database_url, wait_for, workers
from tests.e2e.test_mcp_server_everything import EVERYTHING, PEERS
from tests.factories import McpServerFactory, McpToolFactory
from tests.governance.helpers import approver
from tests.peers import ROOT, running, sdk_server

# SQLite: a file this module sets up itself (shared_database); the suite's in-memory test database
# stays open in this process whatever is closed, so it is not asked for at all.
SQLITE = django_settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
pytestmark = [pytest.mark.e2e] if SQLITE else [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SLOW_SCHEMA = {"type": "object", "properties": {"seconds": {"type": "number"}}}
LONG_SCHEMA = {"type": "object", "properties": {"duration": {"type": "number"}, "steps": {"type": "number"}}}


def _id(result: ToolResult) -> uuid.UUID:
    """The ledger row of a result that has one."""
    assert result.call_id is not None, result
    return result.call_id


@pytest.fixture
def shared_database(request, tmp_path: Path, django_db_blocker, settings) -> Iterator[str | None]:
    """A database this process and the worker processes share; yields its URL for the workers.

    None: the test already ran, and passed, in a pytest process of its own. On SQLite, once the
    session has made its in-memory test database, this process's connection cannot leave it (Django
    ignores closing an in-memory database, which would destroy it), so the workers' file would never
    be the one this process reads."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    if not SQLITE:
        yield _database_url()
        return
    name = str(connection.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:  # as Django's SQLite backend tells
        _run_apart(request.node.nodeid, tmp_path)
        yield None
        return
    with django_db_blocker.unblock():
        saved = connection.settings_dict["NAME"]
        connection.close()
        path = tmp_path / "site.sqlite3"
        connection.settings_dict["NAME"] = str(path)
        try:
            call_command("migrate", verbosity=0)
            yield f"sqlite:///{path}"
        finally:
            connection.close()
            connection.settings_dict["NAME"] = saved


def _run_apart(nodeid: str, tmp_path: Path) -> None:
    """Run one test in a pytest process whose database is a file from the start."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'apart.sqlite3'}"}
    args = [sys.executable, "-m", "pytest", nodeid, "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0 and " passed" in result.stdout, output


def _slow_tool(url: str, *, requires_approval: bool = False) -> McpTool:
    server = McpServerFactory.create(
        identifier="peer",
        url=url,
        data_class=DataClass.EDITOR_CONTENT,
        requires_approval=requires_approval,
        operation_timeout=120,
    )
    return McpToolFactory.create(server=server, remote_name="slow", enabled=True, input_schema=SLOW_SCHEMA)


def _sent(url: str) -> list[float]:
    """The ``seconds`` of every tools/call the SDK peer was sent, in order."""
    log = requests.get(url.removesuffix("/mcp") + "/requests", timeout=5).json()
    return [r["arguments"]["seconds"] for r in log if r["method"] == "tools/call"]


def _task_results():
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.all()


def _run_workers(count: int, tmp_path: Path, url: str):
    return workers(count, tmp_path, DATABASE_URL=url)


def test_twelve_enqueued_calls_each_run_once_on_two_workers(shared_database, tmp_path):
    """Twelve calls queued at once: each is sent to the server exactly once, each row succeeded,
    and both workers took a share."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    with sdk_server("--stateless") as url:
        tool = _slow_tool(url)
        seconds = [round(0.2 + n / 1000, 3) for n in range(12)]
        queued = [tools.enqueue(tool.tool_name, {"seconds": s}) for s in seconds]
        assert {r.status for r in queued} == {"queued"}
        with _run_workers(2, tmp_path, shared_database):
            wait_for(
                lambda: ToolCall.objects.filter(status=ToolCallStatus.SUCCEEDED).count() == 12,
                "twelve calls succeeded",
                tmp_path,
            )
        assert sorted(_sent(url)) == seconds
        assert {tools.result(r.call_id).status for r in queued} == {"succeeded"}
        results = list(_task_results())
        assert len(results) == 12 and {r.status for r in results} == {"SUCCESSFUL"}
        assert {r.worker_ids[0] for r in results} == {"worker-1", "worker-2"}
        assert all(r.return_value["ran"] for r in results)


def test_a_worker_killed_mid_call_never_gets_its_call_run_again(shared_database, tmp_path, settings):
    """SIGKILL to the worker running a call: a redelivered task runs nothing on the other worker,
    and past its budget the reaper ends the row "may have run". The server was sent it once."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 60
    with sdk_server("--stateless") as url:
        tool = _slow_tool(url)
        call = tools.enqueue(tool.tool_name, {"seconds": 30})
        with _run_workers(2, tmp_path, shared_database) as processes:
            wait_for(lambda: _sent(url) == [30], "the call sent by a worker", tmp_path)
            assert tools.result(call.call_id).status == "running"
            [task] = _task_results()
            [worker_id] = task.worker_ids
            processes[worker_id].send_signal(signal.SIGKILL)
            processes[worker_id].wait(timeout=10)

            # As a backend that redelivers would: the same task again, taken by the survivor.
            again = run_tool_call.enqueue(str(call.call_id))
            wait_for(
                lambda: _task_results().filter(pk=again.id, status="SUCCESSFUL").exists(),
                "the redelivered task done",
                tmp_path,
            )
            redelivered = _task_results().get(pk=again.id)
            assert redelivered.return_value == {
                "call_id": str(call.call_id),
                "ran": False,
                "status": "running",
            }
            assert redelivered.worker_ids != [worker_id]

        row = ToolCall.objects.get(pk=_id(call))
        assert row.status == ToolCallStatus.RUNNING
        # Past the queued budget and the margin (moved back rather than waited for).
        assert row.started_at is not None
        ToolCall.objects.filter(pk=row.pk).update(
            started_at=row.started_at - timedelta(seconds=60 + reaper.MARGIN_SECONDS + 1)
        )
        assert reaper.reap() == 1
        ended = tools.result(call.call_id)
        assert ended.status == "failed" and "may have run" in ended.text
        assert ToolCall.objects.get(pk=row.pk).error_kind == reaper.ABANDONED
        assert _sent(url) == [30]


def test_an_approved_held_call_runs_on_a_worker_without_resume(shared_database, tmp_path):
    """A call of a server that requires approval waits; the approval alone gets it run."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    with sdk_server("--stateless") as url:
        tool = _slow_tool(url, requires_approval=True)
        with _run_workers(2, tmp_path, shared_database):
            held = tools.enqueue(tool.tool_name, {"seconds": 0.1})
            assert held.status == "awaiting_approval"
            # No task is enqueued for a held call, so the workers have nothing to take.
            assert _sent(url) == [] and not _task_results().exists()
            tools.approve(held.call_id, approver(), "go ahead")
            wait_for(
                lambda: tools.result(held.call_id).status == "succeeded", "the approved call run", tmp_path
            )
        assert _sent(url) == [0.1]
        row = ToolCall.objects.get(pk=_id(held))
        assert (row.approver_label, row.on_worker) == ("approver", True)


def test_progress_of_a_long_running_tool_shows_on_the_row(shared_database, tmp_path):
    """server-everything's long-running tool reports each step; the row shows progress while the
    call runs and its last report once it ends."""
    if shared_database is None:
        return  # passed in a process of its own (shared_database)
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = ["node", "-r", str(PEERS / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]
    with running(command) as port:
        server = McpServerFactory.create(
            identifier="everything", url=f"http://127.0.0.1:{port}/mcp", data_class=DataClass.PUBLIC_CONTENT
        )
        tool = McpToolFactory.create(
            server=server,
            remote_name="trigger-long-running-operation",
            enabled=True,
            input_schema=LONG_SCHEMA,
        )
        call = tools.enqueue(tool.tool_name, {"duration": 4, "steps": 4})
        seen: list[tuple[str, Progress | None]] = []
        with _run_workers(2, tmp_path, shared_database):

            def look() -> bool:
                now = tools.result(call.call_id)
                if not seen or seen[-1] != (now.status, now.progress):
                    seen.append((now.status, now.progress))
                return now.status == "succeeded"

            wait_for(look, "the long-running call done", tmp_path)
        running_progress = [p for status, p in seen if status == "running" and p is not None]
        assert running_progress, seen
        assert all(p.total == 4 and 1 <= p.progress <= 4 for p in running_progress)
        final = tools.result(call.call_id)
        assert final.progress is not None and (final.progress.progress, final.progress.total) == (4, 4)
        assert "Long running operation completed" in final.text
