"""``enqueue``: a tool call run by a worker of the site's task backend; ``result``: its state.

A call that takes minutes has no place in a web request. ``enqueue`` checks it as ``execute``
does (a refusal comes back at once), writes its ledger row ``queued`` (durably, in the ledger's
own transaction) and enqueues ``worker.run_tool_call`` on Django's Tasks framework once the
caller's transaction commits (``transaction.on_commit``): a rolled-back caller enqueues nothing,
and the reaper ends the row unsent. Any backend works (django-tasks-db, RQ, Celery): the row's
compare-and-set claim (``governance/queued.py``) makes a redelivered or retried task run nothing.

A call of a server that requires approval is held (``awaiting_approval``); its approval enqueues
it (``governance/decisions.py``), and a worker runs it with no ``resume()``. With the immediate
backend (Django's default) the task runs in place, inside ``enqueue``, and the result returned is
the call's outcome as its row records it.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction

from ..governance import preview, queued
from ..governance.decisions import DecisionRefused, parse_call_id
from ..governance.models import ToolCall, ToolCallStatus
from ..mcp import Progress, clean
from . import threads, told
from .execution import prepare_queued
from .results import ToolResult, ToolStatus
from .threads import refuse_in_event_loop

logger = logging.getLogger("nr_llm.tools")


def enqueue(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    actor: object = None,
    data_class_ceiling: str | None = None,
    tool_call_id: str | None = None,
) -> ToolResult:
    """Queue a tool call for a worker; return at once with status ``queued`` and its row's id.

    ``actor``, ``data_class_ceiling`` and ``tool_call_id`` as for ``execute``. A call refused
    here (unknown, invalid, above the ceiling...) comes back failed, and one that needs approval
    ``awaiting_approval``, as from ``execute``. Never raises for a tool's failure.
    """
    refuse_in_event_loop("enqueue", "aenqueue")
    answer = prepare_queued(
        name, arguments, actor=actor, data_class_ceiling=data_class_ceiling, tool_call_id=tool_call_id
    )
    if answer.status != "queued" or answer.call_id is None:
        return answer
    call_id = answer.call_id
    ran_in_place: list[bool] = []

    def send() -> None:
        ran_in_place.append(send_to_worker(call_id))

    transaction.on_commit(send)
    if ran_in_place and ran_in_place[0]:
        return result(call_id)
    return answer


async def aenqueue(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    actor: object = None,
    data_class_ceiling: str | None = None,
    tool_call_id: str | None = None,
) -> ToolResult:
    """``enqueue()`` for an async caller."""
    return await threads.run(
        enqueue,
        name,
        arguments,
        actor=actor,
        data_class_ceiling=data_class_ceiling,
        tool_call_id=tool_call_id,
    )


def send_to_worker(call_id: uuid.UUID) -> bool:
    """Enqueue the worker task of ``call_id``; True when the backend ran it in place already.

    A backend that cannot take the task ends the row unsent (no worker will ever claim it).
    """
    from .worker import run_tool_call  # the task module imports the execution path

    try:
        task_result = run_tool_call.enqueue(str(call_id))
    except Exception:
        # A reporting boundary: a misconfigured or unreachable task backend is the operator's
        # to fix; the call's row says it did not run rather than waiting for the reaper.
        logger.exception("could not enqueue tool call %s on the task backend; it was not run", call_id)
        queued.end_unsent(call_id, "the site's task backend refused the task")
        return False
    return bool(task_result.is_finished)


def on_approved(sender: object, call_id: uuid.UUID, **kwargs: object) -> None:
    """The approval of a call enqueued for a worker: enqueue it, as ``enqueue`` did not."""
    send_to_worker(call_id)


def result(call_id: object) -> ToolResult:
    """The call's current state as a ``ToolResult``: queued, awaiting_approval, running (with its
    latest progress), succeeded, failed, denied, expired; its kept answer once it has run.

    The answer read back is the one the ledger keeps (``NR_LLM_TOOL_CALL_PREVIEW_CHARS``, text and
    structured content as an operator reads them), not the full content blocks ``execute`` returns.
    """
    refuse_in_event_loop("result", "aresult")
    try:
        pk = parse_call_id(call_id)
    except DecisionRefused as exc:
        return ToolResult(str(exc), True, "", "failed")
    call = ToolCall.objects.filter(pk=pk).first()
    if call is None:
        return ToolResult(f"There is no tool call {pk}.", True, "", "failed")
    return as_result(call)


async def aresult(call_id: object) -> ToolResult:
    """``result()`` for an async caller."""
    return await threads.run(result, call_id)


def as_result(call: ToolCall) -> ToolResult:
    """A ledger row as the result its caller reads."""
    head = f"Tool call {call.id} ({call.tool_name})"
    progress = (
        Progress(call.progress, call.progress_total, call.progress_message)
        if call.progress is not None
        else None
    )
    status: ToolStatus
    if call.status == ToolCallStatus.QUEUED or (call.status == ToolCallStatus.APPROVED and call.on_worker):
        text, status = f"{head} is queued for a worker; it has not started.", "queued"
    elif call.status == ToolCallStatus.APPROVED:
        text, status = f"{head} is approved and waits for resume(); it has not run.", "awaiting_approval"
    elif call.status == ToolCallStatus.RUNNING:
        text, status = (
            f"{head} is running{_progress_text(progress)}{_task_text(call)}; its outcome is recorded "
            "when it ends.",
            "running",
        )
    elif call.status in (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED):
        kept = preview.preview_of(call)
        failed = call.status == ToolCallStatus.FAILED
        if not kept:
            kept = f"{head} {'failed' if failed else 'succeeded'}; its answer was not kept."
        blocks = ({"type": "text", "text": kept},) if not failed else ()
        return ToolResult(
            kept,
            failed,
            call.server_identifier,
            "failed" if failed else "succeeded",
            call.id,
            content=blocks,
            progress=progress,
        )
    else:
        return told.as_recorded(call)
    return ToolResult(text, False, call.server_identifier, status, call.id, progress=progress)


def _progress_text(progress: Progress | None) -> str:
    if progress is None:
        return ""
    of = f" of {progress.total:g}" if progress.total is not None else ""
    said = f": {progress.message}" if progress.message else ""
    return f" (progress {progress.progress:g}{of}{said})"


def _task_text(call: ToolCall) -> str:
    """The server's MCP task the call waits on, as the row keeps it (no session id, no state)."""
    task = call.task_state if isinstance(call.task_state, dict) else None
    if not task:
        return ""
    return (
        f" as MCP task {clean(str(task.get('task_id', '')), 100)} ({clean(str(task.get('status', '')), 20)})"
    )
