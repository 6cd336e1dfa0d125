"""The task a worker of the site's task backend runs for an enqueued call (``tools.enqueue``).

``run_tool_call(call_id)`` claims the call's row (``governance/queued.py``) and runs it through
the one execution path (``execution.run_claimed``): the same checks, ledger writes and "may have
run" rules as ``execute``. A delivery that finds nothing to claim (a redelivery, a retry, a call
another worker runs, held or finished) sends nothing and reports the row's state.

A call the server answers with an MCP task is followed in slices (``NR_LLM_QUEUED_TASK_SLICE``)
when the backend can defer a task (django-tasks-db can; the immediate one cannot, and then the
one delivery polls within the whole queued budget). Each slice holds the row's task lease
(``governance/call_tasks.py``) and first schedules a delivery for the lease's end; a slice that
ends with the task still running hands it on at once. A worker killed mid-slice is thus
replaced when its lease passes, and the task's state on the row lets any worker go on polling.
The ``tools/call`` itself is sent once, by the first delivery only. A tool that lists no task
support (every 2026-07-28 tool: there the server decides per call) keeps the whole budget for
its call; if the server answers with a task, the lease is taken then and the task followed for
one slice from its creation, as above.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

import django

from ..conf import conf
from ..governance import call_tasks, ledger, queued
from ..governance.decisions import DecisionRefused, parse_call_id
from ..governance.models import ToolCall, ToolCallStatus
from ..mcp import MINIMUM_LEG_SECONDS, TaskOptions, TaskState, clean
from ..models import McpTool
from . import told
from .execution import follow_claimed, run_claimed

if django.VERSION >= (6, 0):
    from django.tasks import task
else:  # Django 5.2: the backport the framework was upstreamed from.
    from django_tasks import task  # type: ignore[no-redef]

logger = logging.getLogger("nr_llm.tools")


@task()
def run_tool_call(call_id: str, lease: str | None = None) -> dict[str, Any]:
    """Run the enqueued call ``call_id`` once; the report travels back as JSON (a task result must).

    ``lease``: the end of the task lease this delivery was scheduled to take over (ISO 8601).
    """
    try:
        pk = parse_call_id(call_id)
    except DecisionRefused:
        return {"call_id": call_id, "ran": False, "status": "unknown"}
    claimed = queued.claim(pk)
    if claimed is None:
        return {"call_id": str(pk), "ran": False, "status": "gone"}
    call = claimed.call
    if claimed.approved is None:
        if call.status == ToolCallStatus.RUNNING and call.on_worker and call.task_state:
            return _follow(call, _moment(lease))
        # Not this delivery's to run: said in the worker's log, the row keeps the truth.
        logger.info("tool call %s is %s; this delivery runs nothing", pk, call.status)
        return {"call_id": str(pk), "ran": False, "status": call.status}
    budget = conf.QUEUED_OPERATION_TIMEOUT
    sliced = _defers() and _lists_tasks(call)
    if sliced:
        budget = min(budget, conf.QUEUED_TASK_SLICE)
        until = call_tasks.take_lease(pk, budget, following=False)
        if until is not None:
            _deliver(pk, until)
    task = TaskOptions(on_state=call_tasks.TaskRecorder(pk))
    keep_pending = sliced
    if not sliced and _defers():
        # A tool that lists no task support (no 2026-07-28 tool does: the server decides per call)
        # may still be answered with a task: the call keeps the whole budget, and its task is
        # followed for one slice from its creation, under a lease taken then.
        task = TaskOptions(on_state=_LeaseOnCreation(pk), follow_seconds=conf.QUEUED_TASK_SLICE)
        keep_pending = True
    recorder = queued.ProgressRecorder(pk)
    try:
        result = run_claimed(
            call,
            approved=claimed.approved,
            on_progress=recorder,
            budget=budget,
            task=task,
            keep_pending=keep_pending,
        )
    finally:
        recorder.flush()
    if result.status == "running":
        _hand_on(pk)
    return {"call_id": str(pk), "ran": True, "status": result.status}


class _LeaseOnCreation(call_tasks.TaskRecorder):
    """Keeps each state on the row; when the task is created, takes the call's task lease and
    schedules the delivery that takes over when it ends (as a sliced call does before sending)."""

    def __call__(self, state: TaskState) -> None:
        created = self.last is None
        super().__call__(state)
        if not created:
            return
        try:
            until = call_tasks.take_lease(self.call_id, conf.QUEUED_TASK_SLICE, following=False)
        except ledger.LedgerUnavailable as exc:
            logger.warning("the task lease of tool call %s was not taken: %s", self.call_id, exc.for_log())
            return  # this delivery follows the task for its slice; the reaper ends it if none does after
        if until is not None:
            _deliver(self.call_id, until)


def _moment(lease: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(lease) if lease else None
    except ValueError:
        return None


def _follow(call: ToolCall, guarding: datetime | None = None) -> dict[str, Any]:
    """Follow the task of a call a worker sent already, if no other worker does: never resent."""
    pk = call.id
    state = call_tasks.state_of(call)
    if state is None or call.started_at is None:
        logger.warning("tool call %s has no readable task state; the reaper ends it", pk)
        return {"call_id": str(pk), "ran": False, "status": call.status}
    spent = (call_tasks.now() - call.started_at).total_seconds()
    remaining = conf.QUEUED_OPERATION_TIMEOUT - spent
    slice_seconds = max(min(conf.QUEUED_TASK_SLICE, remaining), 0.0)
    until = call_tasks.take_lease(pk, slice_seconds, following=True, guarding=guarding)
    if until is None:
        # Another worker follows the task (or it ended): this delivery has nothing to do.
        return {"call_id": str(pk), "ran": False, "status": call.status}
    if state.status == "cancelled":
        # Cancelled from the admin (task_cancel.py): the server said so, and a 2025-11-25 server
        # ends the task's session with it, so there is nothing left to poll.
        _end(call, "task_cancelled", _cancelled_text(call, state.task_id), spent)
        return {"call_id": str(pk), "ran": True, "status": "failed"}
    if remaining < MINIMUM_LEG_SECONDS:
        _end(call, "task_pending", _past_budget_text(call, state.task_id), spent)
        return {"call_id": str(pk), "ran": True, "status": "failed"}
    last = remaining <= conf.QUEUED_TASK_SLICE
    if not last:
        _deliver(pk, until)
    result = follow_claimed(
        call,
        state,
        task=TaskOptions(on_state=call_tasks.TaskRecorder(pk)),
        budget=slice_seconds,
        keep_pending=not last,
    )
    if result.status == "running":
        _hand_on(pk)
    return {"call_id": str(pk), "ran": True, "status": result.status}


def _lists_tasks(call: ToolCall) -> bool:
    """The tool lists task support: its call is answered with a task, so it is followed in slices."""
    if call.tool_id is None:
        return False
    support = McpTool.objects.filter(pk=call.tool_id).values_list("task_support", flat=True).first()
    return support in ("optional", "required")


def _defers() -> bool:
    return bool(run_tool_call.get_backend().supports_defer)


def _deliver(pk: object, lease: datetime | None = None) -> None:
    """Enqueue a delivery of ``pk``, at once or (``lease``) to take over when that lease ends; a
    backend that refuses is logged: the lease's scheduled delivery or the reaper ends the call."""
    try:
        if lease is None:
            run_tool_call.enqueue(str(pk))
        else:
            run_tool_call.using(run_after=lease).enqueue(str(pk), lease.isoformat())
    except Exception:
        # A reporting boundary: the row keeps the task; the reaper ends it if nobody follows it.
        logger.exception("could not enqueue the next delivery of tool call %s", pk)


def _hand_on(pk: Any) -> None:
    """The slice ended with the task running: the next delivery follows it now."""
    try:
        call_tasks.release(pk)
    except ledger.LedgerUnavailable as exc:
        logger.warning("the task lease of tool call %s was not released: %s", pk, exc.for_log())
        return  # the scheduled delivery takes over when the lease passes
    _deliver(pk)


def _past_budget_text(call: ToolCall, task_id: str) -> str:
    return (
        f"Tool call {call.id} ({call.tool_name}) may have run"
        f"{told.MAY_HAVE_RUN}: the server's MCP task {clean(task_id, 100)} had not ended when the "
        "call's budget (NR_LLM_QUEUED_OPERATION_TIMEOUT) passed; its result was not read."
    )


def _cancelled_text(call: ToolCall, task_id: str) -> str:
    return (
        f"Tool call {call.id} ({call.tool_name}) may have run in part{told.MAY_HAVE_RUN}: the server "
        f"cancelled its MCP task {clean(task_id, 100)} when asked to."
    )


def _end(call: ToolCall, kind: str, text: str, spent: float) -> None:
    """End a call whose task this worker no longer polls: its outcome is unknown (may have run)."""
    ledger.finish(
        call.id,
        is_error=True,
        error_kind=ledger.may_have_run_kind(kind),
        duration_ms=round(spent * 1000),
        era="",
        result_text=text,
        now=call_tasks.now(),
    )
