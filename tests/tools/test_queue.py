"""tools.enqueue / result and the worker task: the row first, claimed once, held calls run on approval.

The MCP peer is the official SDK server on 127.0.0.1 (its /requests log shows what it was sent);
the task backends are django-tasks' own: the immediate one (runs in place) and the dummy one
(keeps the task, so the test plays the worker by calling the task, once or twice).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
import requests
from django.db import connection, transaction

from nr_llm import tools
from nr_llm.governance import queued, reaper
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.mcp.protocol.progress import Progress
from nr_llm.models import DataClass, McpTool
from nr_llm.tools import ToolResult
from nr_llm.tools.worker import run_tool_call
from tests.factories import McpServerFactory, McpToolFactory
from tests.governance.helpers import approver
from tests.peers import sdk_server

pytestmark = pytest.mark.django_db(transaction=True)

DUMMY = "django_tasks.backends.dummy.DummyBackend"
ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _id(result: ToolResult) -> uuid.UUID:
    """The ledger row of a result that has one."""
    assert result.call_id is not None, result
    return result.call_id


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def echo(peer: str, settings) -> McpTool:
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(
        identifier="peer", url=peer, enabled=True, data_class=DataClass.EDITOR_CONTENT
    )
    return McpToolFactory.create(server=server, remote_name="echo", enabled=True, input_schema=ECHO_SCHEMA)


@pytest.fixture
def dummy(settings):
    """A backend that keeps every task: the test runs them, as a worker would."""
    settings.TASKS = {"default": {"BACKEND": DUMMY}}
    backend = run_tool_call.get_backend()
    backend.clear()  # type: ignore[attr-defined]
    return backend


def _sent(peer: str, text: str) -> int:
    """How many tools/call with this text the peer was sent."""
    log = requests.get(peer.removesuffix("/mcp") + "/requests", timeout=5).json()
    return sum(1 for r in log if r["method"] == "tools/call" and (r["arguments"] or {}).get("text") == text)


def test_with_the_immediate_backend_the_call_runs_in_place(echo, peer):
    """Django's default backend runs the task inside enqueue: the result is the recorded outcome."""
    result = tools.enqueue(echo.tool_name, {"text": "in place"}, actor="site")
    assert (result.status, result.is_error, result.text) == ("succeeded", False, "in place")
    row = ToolCall.objects.get(pk=_id(result))
    assert (row.status, row.on_worker, row.actor_label) == (ToolCallStatus.SUCCEEDED, True, "site")
    assert _sent(peer, "in place") == 1


def test_a_queued_call_waits_then_runs_once_however_often_it_is_delivered(echo, peer, dummy):
    """enqueue writes the row queued and enqueues one task; two deliveries of it send one call."""
    result = tools.enqueue(echo.tool_name, {"text": "twice delivered"})
    assert (result.status, result.is_error) == ("queued", False)
    assert tools.result(result.call_id).status == "queued"
    [task] = dummy.results
    assert task.args == [str(result.call_id)]
    assert _sent(peer, "twice delivered") == 0

    first = run_tool_call.call(*task.args)
    second = run_tool_call.call(*task.args)

    assert first == {"call_id": str(result.call_id), "ran": True, "status": "succeeded"}
    assert second == {"call_id": str(result.call_id), "ran": False, "status": "succeeded"}
    assert _sent(peer, "twice delivered") == 1
    read = tools.result(result.call_id)
    assert (read.status, read.text, read.call_id) == ("succeeded", "twice delivered", result.call_id)
    assert read.content == ({"type": "text", "text": "twice delivered"},)


def test_a_refused_call_is_not_queued(echo, dummy):
    """Arguments the schema refuses come back failed at once; no task is enqueued."""
    result = tools.enqueue(echo.tool_name, {"text": 3})
    assert (result.status, result.is_error) == ("failed", True)
    assert dummy.results == []
    assert ToolCall.objects.get(pk=_id(result)).error_kind == "invalid_arguments"


def test_a_rolled_back_caller_enqueues_nothing_and_the_reaper_ends_the_row_unsent(echo, dummy, settings):
    """The row is the ledger's (it stays); the task waits for the caller's commit, which never
    comes; past the queued budget the reaper ends the row as not run."""
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 30
    if connection.vendor == "sqlite":
        pytest.skip("on SQLite the ledger is not written inside a caller's transaction")
    with pytest.raises(RuntimeError), transaction.atomic():
        result = tools.enqueue(echo.tool_name, {"text": "rolled back"})
        assert result.status == "queued"
        raise RuntimeError("the view failed")
    assert dummy.results == []
    row = ToolCall.objects.get(pk=_id(result))
    assert row.status == ToolCallStatus.QUEUED
    ToolCall.objects.filter(pk=row.pk).update(
        created=row.created - timedelta(seconds=30 + reaper.MARGIN_SECONDS + 5)
    )
    assert reaper.reap() == 1
    row.refresh_from_db()
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, queued.NO_WORKER)
    assert tools.result(row.pk).status == "failed"


def test_a_held_call_runs_on_a_worker_once_approved(echo, peer, dummy):
    """An enqueued call of a server that requires approval waits; the approval enqueues it, and
    the worker runs it with no resume()."""
    echo.server.requires_approval = True
    echo.server.save()
    held = tools.enqueue(echo.tool_name, {"text": "approved on a worker"})
    assert held.status == "awaiting_approval"
    assert dummy.results == []
    tools.approve(held.call_id, approver(), "go")
    assert tools.result(held.call_id).status == "queued"
    [task] = dummy.results
    assert run_tool_call.call(*task.args)["ran"] is True
    assert run_tool_call.call(*task.args)["ran"] is False
    assert tools.result(held.call_id).status == "succeeded"
    assert _sent(peer, "approved on a worker") == 1


def test_a_denied_held_call_is_never_enqueued(echo, dummy):
    """Denied, it ends denied: no task, and a stray delivery runs nothing."""
    echo.server.requires_approval = True
    echo.server.save()
    held = tools.enqueue(echo.tool_name, {"text": "denied"})
    tools.deny(held.call_id, approver(), "no")
    assert dummy.results == []
    assert run_tool_call.call(str(held.call_id)) == {
        "call_id": str(held.call_id),
        "ran": False,
        "status": "denied",
    }
    assert tools.result(held.call_id).status == "denied"


def test_a_killed_workers_row_ends_may_have_run_and_is_never_run_again(echo, peer, dummy, settings):
    """A row left running (its worker died) is reaped past the queued budget; a redelivery runs nothing."""
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 30
    result = tools.enqueue(echo.tool_name, {"text": "orphaned"})
    claimed = queued.claim(_id(result))
    assert claimed is not None and claimed.approved is False  # the worker that then died
    ToolCall.objects.filter(pk=_id(result)).update(started_at=claimed.call.created - timedelta(hours=1))
    assert reaper.reap() == 1
    row = ToolCall.objects.get(pk=_id(result))
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, reaper.ABANDONED)
    assert run_tool_call.call(str(row.pk))["ran"] is False
    assert _sent(peer, "orphaned") == 0
    assert "The server may have run the tool" in tools.result(row.pk).text


def test_a_running_worker_row_is_not_reaped_within_the_queued_budget(echo, dummy, settings):
    """The ordinary reaper's 20 s budget does not apply to a worker's row: its own budget does."""
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 3600
    result = tools.enqueue(echo.tool_name, {"text": "long"})
    claimed = queued.claim(_id(result))
    assert claimed is not None
    ToolCall.objects.filter(pk=_id(result)).update(started_at=claimed.call.created - timedelta(minutes=30))
    assert reaper.reap() == 0
    assert tools.result(result.call_id).status == "running"


def test_a_call_that_waited_past_its_budget_is_not_run_late(echo, peer, dummy, settings):
    """A delivery after the queued budget ends the row unsent instead of running it."""
    settings.NR_LLM_QUEUED_OPERATION_TIMEOUT = 30
    result = tools.enqueue(echo.tool_name, {"text": "too late"})
    ToolCall.objects.filter(pk=_id(result)).update(
        created=ToolCall.objects.get(pk=_id(result)).created - timedelta(minutes=5)
    )
    assert run_tool_call.call(str(result.call_id))["ran"] is False
    assert ToolCall.objects.get(pk=_id(result)).error_kind == queued.NO_WORKER
    assert _sent(peer, "too late") == 0


def test_progress_is_kept_at_most_once_a_second_and_flushed_at_the_end(echo, dummy):
    """The recorder writes the first report, holds those within the interval, flushes the last."""
    result = tools.enqueue(echo.tool_name, {"text": "progress"})
    queued.claim(_id(result))
    now = [100.0]
    recorder = queued.ProgressRecorder(_id(result), monotonic=lambda: now[0])
    recorder(Progress(1, 4))
    recorder(Progress(2, 4, "half"))
    assert recorder.writes == 1
    read = tools.result(result.call_id)
    assert (read.status, read.progress) == ("running", Progress(1, 4, ""))
    assert "progress 1 of 4" in read.text
    now[0] += 1.5
    recorder(Progress(3, 4, "three"))
    recorder.flush()
    assert recorder.writes == 2
    assert tools.result(result.call_id).progress == Progress(3, 4, "three")


def test_a_call_id_that_is_no_call():
    """result() of garbage or of an unknown id is a failed result, never an exception."""
    assert tools.result("nope").status == "failed"
    assert "There is no tool call" in tools.result("00000000-0000-0000-0000-000000000000").text


def test_the_admins_call_page_shows_the_progress(echo, dummy, client):
    """The call's page reads the latest progress, its share and the server's message (escaped)."""
    from django.contrib.auth.models import User
    from django.urls import reverse

    result = tools.enqueue(echo.tool_name, {"text": "shown"})
    queued.claim(_id(result))
    queued.ProgressRecorder(_id(result))(Progress(3, 4, "<b>step</b> three"))
    client.force_login(User.objects.create_superuser("root", password="pw"))
    page = client.get(reverse("admin:nr_llm_toolcall_change", args=[result.call_id])).content.decode()
    assert "3 of 4 (75%) · &lt;b&gt;step&lt;/b&gt; three" in page


def test_resume_of_a_queued_call_runs_nothing_and_says_queued(echo, peer, dummy):
    """resume() is for approved calls: a queued one is the worker's, and stays queued."""
    result = tools.enqueue(echo.tool_name, {"text": "not resumed"})
    again = tools.resume(result.call_id)
    assert (again.status, again.is_error) == ("queued", False)
    assert ToolCall.objects.get(pk=_id(result)).status == ToolCallStatus.QUEUED
    assert _sent(peer, "not resumed") == 0


def test_the_async_twins_queue_and_read_alike(echo, dummy):
    """aenqueue queues as enqueue does; aresult reads the row as result does."""

    async def view() -> tuple[ToolResult, ToolResult]:
        queued_now = await tools.aenqueue(echo.tool_name, {"text": "async"}, actor="async site")
        return queued_now, await tools.aresult(queued_now.call_id)

    result, read = asyncio.run(view())
    assert result.status == "queued"
    assert (read.status, read.call_id) == ("queued", result.call_id)
    # The task went to the pool thread's own backend instance (backends are per thread).
    assert ToolCall.objects.filter(pk=_id(result), status=ToolCallStatus.QUEUED, on_worker=True).exists()
