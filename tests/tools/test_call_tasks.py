"""Calls the server answers with an MCP task: followed by workers from the row, never resent.

The peer is ``tests.peers.task_server`` on 127.0.0.1 (its ``/seen`` log lists every request it
was sent); the task backend is django-tasks' dummy one, so the test plays the workers by calling
the deliveries it keeps, and a "restarted worker" is a delivery in a fresh state read from the row.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from nr_llm import tools
from nr_llm.governance import call_tasks, queued
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.protocol.tasks import TaskError, TaskOptions, TaskState
from nr_llm.models import DataClass, McpTool
from nr_llm.servers import credentials
from nr_llm.tools.worker import run_tool_call
from tests.factories import McpServerFactory, McpToolFactory
from tests.mcp.scripted import FakeClock
from tests.peers import running

pytestmark = pytest.mark.django_db(transaction=True)

DUMMY = "django_tasks.backends.dummy.DummyBackend"


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.task_server"]) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def dummy(settings):
    settings.TASKS = {"default": {"BACKEND": DUMMY}}
    backend = run_tool_call.get_backend()
    backend.clear()  # type: ignore[attr-defined]
    return backend


def _tool(settings, base: str, scenario: str, tag: str, support: str = "optional") -> McpTool:
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(
        identifier=tag[:32],
        url=f"{base}/handshake/{scenario}/{tag}/mcp",
        enabled=True,
        data_class=DataClass.EDITOR_CONTENT,
    )
    return McpToolFactory.create(
        server=server, remote_name="work", enabled=True, input_schema={"type": "object"}, task_support=support
    )


def _seen(base: str, tool: McpTool) -> list[str]:
    path = tool.server.url.split("/", 3)[3]
    with urllib.request.urlopen(f"{base}/seen", timeout=5) as answer:
        return [row["method"] for row in json.load(answer) if row["path"] == f"/{path}"]


def _deliveries(dummy: Any) -> list[Any]:
    """The deliveries the workers have not taken yet, oldest first (taken: removed)."""
    kept = list(dummy.results)
    dummy.clear()
    return kept


def test_a_task_is_followed_in_slices_handed_on_and_ended_by_the_budget(base, settings, dummy):
    """The first delivery sends the call once and keeps the task on the row; each later slice
    follows it from the row; a lease held by another worker leaves a delivery idle; when the
    queued budget passes the row ends "may have run", naming the task. One tools/call in all."""
    settings.NR_LLM_QUEUED_TASK_SLICE = 2
    tool = _tool(settings, base, "never", "slices")
    queued_call = tools.enqueue(tool.tool_name, {})
    pk = queued_call.call_id
    assert isinstance(pk, uuid.UUID)
    [first] = _deliveries(dummy)

    assert run_tool_call.call(*first.args) == {"call_id": str(pk), "ran": True, "status": "running"}
    row = ToolCall.objects.get(pk=pk)
    assert row.status == ToolCallStatus.RUNNING and row.task_lease_until is None
    assert row.task_state is not None and row.task_state["status"] == "working"
    assert row.task_state["era"] == "handshake" and "session_id" not in row.task_state
    secret = json.loads(credentials.decrypt(row.task_secret_ciphertext))
    assert set(secret) == {"session_id"}  # the session the task lives in, encrypted
    read = tools.result(pk)
    assert read.status == "running" and row.task_state["task_id"] in read.text
    # The watchdog for the slice's lease, then the hand-on: the next delivery follows at once.
    watchdog, handed = _deliveries(dummy)
    assert watchdog.task.run_after is not None and handed.task.run_after is None

    # A worker already following the task: this delivery does nothing.
    assert call_tasks.take_lease(pk, 30, following=True) is not None
    assert run_tool_call.call(*handed.args)["ran"] is False
    call_tasks.release(pk)
    assert run_tool_call.call(*handed.args) == {"call_id": str(pk), "ran": True, "status": "running"}
    _deliveries(dummy)

    # The budget runs out: the last slice polls what is left, then the row ends.
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 30
    assert row.started_at is not None
    ToolCall.objects.filter(pk=pk).update(started_at=row.started_at - timedelta(seconds=29))
    assert run_tool_call.call(str(pk)) == {"call_id": str(pk), "ran": True, "status": "failed"}
    row.refresh_from_db()
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, "may_have_run:task_pending")
    read = tools.result(pk)
    assert "may have run" in read.text and row.task_state["task_id"] in read.text
    assert _deliveries(dummy) == []  # the last slice schedules nothing
    assert _seen(base, tool).count("tools/call") == 1


def test_a_restarted_worker_resumes_the_task_from_the_row(base, settings, dummy):
    """A worker that sent the call and then died leaves the task on the row; the next delivery
    (another worker, no memory of the first) polls it to its end and records the answer, and
    the server is sent the call once."""
    tool = _tool(settings, base, "slow", "resume")
    pk = tools.enqueue(tool.tool_name, {}).call_id
    assert isinstance(pk, uuid.UUID)
    _deliveries(dummy)
    claimed = queued.claim(pk)
    assert claimed is not None and claimed.call.status == ToolCallStatus.RUNNING
    # The "first worker": it sends the call and hears the task, then its budget (on a fake clock,
    # so in no real time) runs out before the task ends: as a worker killed between polls.
    clock = FakeClock()
    client = McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=clock, sleep=clock.advance
    )
    endpoint = Endpoint(identifier=tool.server.identifier, url=tool.server.url, budget_seconds=3)
    with pytest.raises(TaskError) as pending:
        client.call_tool(
            endpoint,
            "work",
            {},
            task=TaskOptions(task_support="optional", on_state=call_tasks.TaskRecorder(pk)),
        )
    assert pending.value.kind == "task_pending"
    time.sleep(1.6)  # the peer completes the task 1.5 s after it was created

    assert run_tool_call.call(str(pk)) == {"call_id": str(pk), "ran": True, "status": "succeeded"}
    read = tools.result(pk)
    assert (read.status, read.is_error) == ("succeeded", False) and read.text.startswith("done after")
    row = ToolCall.objects.get(pk=pk)
    assert row.task_state is not None and row.task_state["status"] == "completed"
    methods = _seen(base, tool)
    assert methods.count("tools/call") == 1 and methods.count("tasks/result") == 1


def test_a_task_the_server_says_failed_is_failed_not_may_have_run(base, settings, dummy):
    """The server's own "failed" is a failure it reported; the row says so."""
    tool = _tool(settings, base, "failed", "failed")
    pk = tools.enqueue(tool.tool_name, {}).call_id
    assert pk is not None
    [delivery] = _deliveries(dummy)
    assert run_tool_call.call(*delivery.args)["status"] == "failed"
    row = ToolCall.objects.get(pk=pk)
    assert row.error_kind == "task_failed"
    assert "reported an error" in tools.result(pk).text


def test_a_task_the_server_forgets_ends_may_have_run_task_lost(base, settings, dummy):
    """A task the server no longer knows cannot be read: the call may have run, and is not resent."""
    tool = _tool(settings, base, "forget", "forget")
    pk = tools.enqueue(tool.tool_name, {}).call_id
    assert pk is not None
    [delivery] = _deliveries(dummy)
    assert run_tool_call.call(*delivery.args)["status"] == "failed"
    row = ToolCall.objects.get(pk=pk)
    assert row.error_kind == "may_have_run:task_lost"
    text = tools.result(pk).text
    assert "may have run" in text and row.task_state is not None and row.task_state["task_id"] in text
    assert _seen(base, tool).count("tools/call") == 1


def test_a_plain_execute_polls_within_its_budget(base, settings):
    """Outside a worker the client polls within the operation's budget: a task that completes is
    the tool's answer; one that outlives the budget is "may have run" with its task id."""
    quick = _tool(settings, base, "quick", "plain-quick", support="required")
    done = tools.execute(quick.tool_name, {})
    assert (done.status, done.text) == ("succeeded", "done after 2 polls")
    assert _seen(base, quick).count("tools/call") == 1

    never = _tool(settings, base, "never", "plain-never", support="required")
    never.server.operation_timeout = 2
    never.server.save()
    ended = tools.execute(never.tool_name, {})
    assert ended.is_error and "may have run" in ended.text and "MCP task " in ended.text
    assert ended.call_id is not None
    row = ToolCall.objects.get(pk=ended.call_id)
    assert (row.status, row.error_kind, row.task_state) == (
        ToolCallStatus.FAILED,
        "may_have_run:task_pending",
        None,
    )
    assert _seen(base, never).count("tools/call") == 1


def test_a_tool_without_task_support_is_called_plainly(base, settings):
    """No taskSupport listed: execute asks for no task (the 2025 form forbids it)."""
    plain = _tool(settings, base, "quick", "plain-none", support="")
    assert tools.execute(plain.tool_name, {}).status == "succeeded"
    assert "tasks/get" not in _seen(base, plain)


def test_the_stored_state_keeps_secrets_out_of_the_json():
    """Session id and request state are encrypted; the rest is readable JSON, and reads back."""
    state = TaskState("t-1", "working", "modern", request_state="opaque", session_id="s-9")
    data, secret = call_tasks.stored(state)
    assert "opaque" not in json.dumps(data) and "s-9" not in json.dumps(data)
    row = ToolCall(task_state=data, task_secret_ciphertext=secret)
    assert call_tasks.state_of(row) == state
