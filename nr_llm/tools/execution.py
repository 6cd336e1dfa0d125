"""``execute`` and ``resume``: run a tool, leave a ledger row, hold a call for approval.

A call moves through explicit states (``_Trace.state``):

- ``prepared``: its name, arguments and catalogue row read, nothing written;
- ``refused``: it may not run (unknown, invalid, above the ceiling, disabled...): its row is
  written finished, and nothing is sent;
- ``held``: its server requires approval: its row awaits an operator, nothing is sent
  (``resume(call_id)`` runs it once approved, exactly the arguments approved, exactly once);
- ``recorded``: its running row is committed, durably, before anything of it is sent; a row
  that cannot be written stops the call unsent;
- ``sent``: handed to the MCP client: from here a failure may come after it ran;
- ``finished``: its outcome is written, the row is no longer running.

Neither raises: a tool's failure, a refusal, and whatever else goes wrong (a database or
credential error included) come back as an ``is_error`` result naming the server, the
traceback in the log with the server's credential masked. What the model reads is written in
``told.py``: "could not run" only when the call was never sent or the server's answer proves it
refused; otherwise "may have run", and the ledger records the same.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from django.utils import timezone

from ..authorization import actors
from ..authorization import runtime as authorization
from ..governance import ceiling as ceilings
from ..governance import decisions, leases, ledger
from ..governance.decisions import DecisionRefused
from ..governance.ledger import LedgerUnavailable, NewCall, WallClock
from ..governance.models import ToolCall, ToolCallStatus
from ..mcp import (
    CallOutcome,
    Endpoint,
    McpTransportError,
    ProgressListener,
    TaskError,
    TaskOptions,
    TaskState,
    clean,
    conform_outcome,
    encodable,
    masked_outcome,
    may_have_run,
    redact,
)
from ..models import DEFINITION_CHANGED, McpTool
from ..resources.reading import remember_links
from ..servers import credentials, health
from ..servers.endpoints import mcp_client
from . import elicit, telemetry, told
from .arguments import checked_arguments, refusal_text
from .lookup import tool_by_name
from .registry import LocalTool, local_tool
from .results import ToolResult, ToolStatus
from .threads import refuse_in_event_loop

logger = logging.getLogger("nr_llm.tools")

State = Literal["prepared", "refused", "held", "recorded", "sent", "finished"]


class ToolCaller(Protocol):
    """The part of ``McpClient`` a tool call needs."""

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
    ) -> CallOutcome: ...


class TaskFollower(Protocol):
    """The part of ``McpClient`` a call whose task was created already needs (a worker's)."""

    def poll_task(
        self, endpoint: Endpoint, task: TaskState, name: str = "", *, options: TaskOptions | None = None
    ) -> CallOutcome: ...


@dataclass
class _Trace:
    """What the reporting boundary needs to name, filled in as the call goes on."""

    name: str
    state: State = "prepared"
    server: str = ""
    origin: str = ""
    call_id: uuid.UUID | None = None
    # The server's credential, for masking it in a logged traceback; never in repr (a local of
    # every frame below execute(), which an error reporter records).
    secret: str | None = field(default=None, repr=False)
    #: ``execute``'s call as far as it is known: the boundary records it if nothing else did.
    call: NewCall | None = None
    #: The server's health stamps of the call, written with its outcome (one write, not two).
    stamps: list[health.Stamp] = field(default_factory=list, repr=False)
    #: The call's place under the server's caps (``leases``), given back when it ends.
    lease: leases.Lease | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        """The row says "running": every way out must record how it ended."""
        return self.state in ("recorded", "sent") and self.call_id is not None


@dataclass(frozen=True)
class _Ran:
    result: ToolResult
    error_kind: str = ""
    era: str = ""
    #: The server's task, still running, kept for a worker to follow: the row is not ended.
    pending: TaskState | None = None


@telemetry.traced("execute")
def execute(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    client: ToolCaller | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    clock: WallClock | None = None,
    tool_call_id: str | None = None,
    responder: elicit.Responder | None = None,
) -> ToolResult:
    """Run a tool and return its result; a failure is an ``is_error`` result, never an exception.

    ``actor``: ``request.user`` or a label of the caller's choosing, kept in the ledger.
    ``data_class_ceiling``: the most sensitive data class the caller's model may see (None:
    ``NR_LLM_DATA_CLASS_CEILING``); a tool above it is refused, not run.
    ``tool_call_id``: the provider's id of this call (``tool_calls[i].id``, ``call_id``,
    ``tool_use.id``): the result carries it for ``tool_messages``, the trace as
    ``gen_ai.tool.call.id``. Not the ledger row's id, which is ``result.call_id``.
    ``responder``: answers a server that asks for input during the call (elicitation); without
    one nothing is declared, and a server that needs input ends the call ``needs_input``.
    Called from a running event loop it raises ``SynchronousOnlyOperation``: await ``aexecute``.
    """
    refuse_in_event_loop("execute", "aexecute")
    trace = _Trace("")
    wall = clock or timezone.now
    try:
        # Inside the boundary: even a name that cannot be turned into text is an error result.
        trace.name = clean(name, ledger.NAME_CHARS)
        result = _execute(trace, name, arguments, client, actor, data_class_ceiling, wall, responder)
    except Exception as exc:
        result = _unexpected(trace, exc, wall)
    return _answering(result, tool_call_id)


@telemetry.traced("resume")
def resume(
    call_id: object,
    *,
    client: ToolCaller | None = None,
    clock: WallClock | None = None,
    tool_call_id: str | None = None,
) -> ToolResult:
    """Run an approved call once; any other state comes back as its result (never an exception).

    A second resume of a call that ran returns its recorded outcome; one of a denied or
    expired call says so, and nothing runs. ``call_id``: the ledger row's id (``result.call_id``
    of the held call); ``tool_call_id``: the provider's id, as for ``execute``.
    """
    refuse_in_event_loop("resume", "aresume")
    trace = _Trace("")
    wall = clock or timezone.now
    try:
        result = _resume(trace, call_id, client, wall)
    except Exception as exc:
        result = _unexpected(trace, exc, wall)
    return _answering(result, tool_call_id)


def _answering(result: ToolResult, tool_call_id: str | None) -> ToolResult:
    """The result carrying the provider's id of the call it answers (``tool_messages`` reads it)."""
    if tool_call_id is None:
        return result
    # Verbatim: the provider matches the answer to its call by this exact id.
    return dataclasses.replace(result, tool_call_id=str(tool_call_id))


@telemetry.traced("execute")
def prepare_queued(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    actor: object = None,
    data_class_ceiling: str | None = None,
    clock: WallClock | None = None,
    tool_call_id: str | None = None,
) -> ToolResult:
    """``execute`` up to its row, written ``queued`` for a worker (``tools.enqueue``): the same
    checks, refusals and holds, and nothing sent. ``tool_call_id`` as for ``execute``."""
    trace = _Trace("")
    wall = clock or timezone.now
    try:
        trace.name = clean(name, ledger.NAME_CHARS)
        return _execute(trace, name, arguments, None, actor, data_class_ceiling, wall, on_worker=True)
    except Exception as exc:
        return _unexpected(trace, exc, wall)


def _execute(
    trace: _Trace,
    name: object,
    arguments: object,
    client: ToolCaller | None,
    actor: object,
    data_class_ceiling: str | None,
    wall: WallClock,
    responder: elicit.Responder | None = None,
    on_worker: bool = False,
) -> ToolResult:
    if arguments is None:
        arguments = {}
    canonical, problem = _canonical(arguments)
    call = trace.call = NewCall(trace.name, canonical, ledger.actor_fields(actor), on_worker=on_worker)
    if not isinstance(name, str):
        # A model's malformed call (a list or object as the name) is not a lookup key.
        return _refused(trace, call, "unknown_tool", f"unknown tool {clean(name)!r}", wall)
    if problem:
        # A known tool's refused call is recorded under its server, as any other call of it.
        row = None if local_tool(name) is not None else _catalogue_row(name)
        if row is not None:
            trace.server, trace.origin = row.server.identifier, _origin(row)
            call = trace.call = dataclasses.replace(call, tool=row)
        return _refused(trace, call, "invalid_arguments", f"arguments for {clean(name)!r} {problem}", wall)
    assert isinstance(arguments, dict)
    try:
        ceiling = ceilings.resolve(data_class_ceiling)
    except ValueError as exc:
        return _refused(
            trace, call, "invalid_ceiling", f"{exc}; no tool is run without a valid ceiling", wall
        )
    call = trace.call = dataclasses.replace(call, data_class_ceiling=ceiling)
    local = local_tool(name)
    if local is not None and on_worker:
        return _queue(trace, call, wall)
    if local is not None:
        given: dict[str, Any] = arguments
        return _run_recorded(trace, call, lambda: _run_local(local, given), wall)
    row = _catalogue_row(name)
    if row is None:
        return _refused(trace, call, "unknown_tool", f"unknown tool {clean(name)!r}", wall)
    server = row.server
    trace.server, trace.origin = server.identifier, _origin(row)
    call = trace.call = dataclasses.replace(call, tool=row)
    telemetry.describe(
        row.tool_name,
        server.identifier,
        server.data_class,
        ceiling,
        server.requires_approval,
        lambda: arguments,
    )
    refusal = _refusal(row, ceiling)
    if refusal is not None:
        return _refused(trace, call, *refusal, wall)
    # Checked against the server's own schema before anything is sent (or held for approval).
    arguments, problems = checked_arguments(row.input_schema, arguments)
    if problems:
        return _refused(trace, call, "invalid_arguments", refusal_text(name, problems), wall)
    call = trace.call = dataclasses.replace(call, canonical=ledger.canonical_json(arguments))
    user_id = actors.actor_id(actor)
    if server.per_user:
        # Asked before the approval question: a call its actor cannot make is not held either.
        access = actors.resolve_user(server, user_id)
        if isinstance(access, actors.NeedsAuthorization):
            kind, text, result = _needs(access, row)
            return _refused(trace, call, kind, text, wall, result)
    if server.requires_approval:
        return _hold(trace, call, wall)
    if on_worker:
        return _queue(trace, call, wall)
    return _run_recorded(
        trace, call, lambda: _run_remote(trace, row, arguments, client, user_id, responder), wall
    )


def _needs(access: actors.NeedsAuthorization, row: McpTool) -> tuple[str, str, ToolResult]:
    """(kind, text, result) of a call not sent because its actor has no usable grant."""
    text = access.model_text(row.tool_name)
    result = ToolResult(
        text,
        True,
        access.server,
        "needs_authorization",
        connect_url=access.connect_url,
        authorization_reason=access.reason,
    )
    return "needs_authorization", text, result


#: The row a turn's plan read for the call this thread runs (``turn.py``): not read twice.
_planned_row: ContextVar[McpTool | None] = ContextVar("nr_llm_planned_row", default=None)


def _catalogue_row(name: str) -> McpTool | None:
    planned = _planned_row.get()
    if planned is not None and planned.tool_name == name:
        return planned
    return tool_by_name(name)


@contextmanager
def planned_row(row: McpTool | None) -> Iterator[None]:
    """Run ``execute`` in this block with ``row`` as its catalogue row (a turn read it already)."""
    token = _planned_row.set(row)
    try:
        yield
    finally:
        _planned_row.reset(token)


def _canonical(arguments: object) -> tuple[str, str]:
    """(canonical JSON, "") or ("", why the arguments cannot be a call's)."""
    if isinstance(arguments, str | bytes):
        return "", _not_json(arguments)
    if not isinstance(arguments, dict):
        return "", f"must be a JSON object, not {_kind(arguments)}"
    try:
        canonical = ledger.canonical_json(arguments)
    except (TypeError, ValueError):
        return "", "must be JSON (no NaN, infinity or Python objects)"
    try:
        canonical.encode()
    except UnicodeEncodeError as exc:
        # Half of a UTF-16 pair: no server could read it, and neither the digest an approver
        # binds nor the ledger's encryption can be made of it.
        return "", (
            f"must be valid Unicode text: they hold a lone surrogate "
            f"(\\u{ord(canonical[exc.start]):04x}, half of a character)"
        )
    return canonical, ""


def _not_json(text: str | bytes) -> str:
    """Why a model's arguments text is no call's, in words it can act on: a cut-off answer (it
    ran out of output tokens) reads differently from a malformed one."""
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        message = getattr(exc, "msg", "not JSON")
        at = getattr(exc, "pos", 0)
        whole = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if message.startswith("Unterminated") or at >= len(whole.rstrip()):
            return (
                "were cut off: their JSON text ends before it is complete (the tool was not run). "
                "Send the whole arguments again as one JSON object."
            )
        return (
            f"are not valid JSON ({clean(message, 80)} at character {at}; the tool was not run). "
            "Send the arguments as one JSON object."
        )
    return f"must be a JSON object, not {_kind(parsed)}"


def _kind(value: object) -> str:
    """A JSON value's kind, as a model reads it."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else "a JSON object"


def _refusal(row: McpTool, ceiling: str) -> tuple[str, str] | None:
    """(error kind, text) when ``row`` may not run for a caller under ``ceiling``."""
    server = row.server
    if row.disabled_reason or row.pinned_fingerprint != row.definition_fingerprint:
        # Changed since an operator enabled it: what a model was told about it may be stale.
        return "definition_changed", (
            f'tool {row.tool_name!r} of MCP server "{server.name}" is disabled: its {DEFINITION_CHANGED}, '
            "and an operator must review the change"
        )
    if row.orphaned:
        return (
            "orphaned",
            f'tool {row.tool_name!r} of MCP server "{server.name}" is no longer offered by its server',
        )
    if not (row.enabled and server.enabled):
        return "disabled", f'tool {row.tool_name!r} of MCP server "{server.name}" is disabled'
    if not server.data_class:
        return "no_data_class", (
            f'MCP server "{server.name}" has no declared data class; its tools are not offered until '
            "an operator declares what data it may see"
        )
    if not ceilings.allows(ceiling, server.data_class):
        return "above_ceiling", (
            f'tool {row.tool_name!r} of MCP server "{server.name}" may see '
            f"{ceilings.label(server.data_class)}, above this caller's data-class ceiling "
            f"({ceilings.label(ceiling)}); it was not run"
        )
    return None


def _refused(
    trace: _Trace, call: NewCall, kind: str, text: str, wall: WallClock, result: ToolResult | None = None
) -> ToolResult:
    trace.state = "refused"
    telemetry.note_error(kind)
    result = result or ToolResult(text, True, trace.server, "failed")
    try:
        call_id = ledger.open_call(call, ToolCallStatus.FAILED, wall(), error_kind=kind, result_text=text)
    except LedgerUnavailable as exc:
        _lost(trace, call, exc)
        return result
    return dataclasses.replace(result, call_id=call_id)


def _hold(trace: _Trace, call: NewCall, wall: WallClock) -> ToolResult:
    trace.state = "held"
    try:
        # Held from the database's clock, as its expiry is judged (decisions.approval_now).
        held_at = decisions.approval_moment(wall)
        call_id = ledger.open_call(call, ToolCallStatus.AWAITING_APPROVAL, held_at)
    except LedgerUnavailable as exc:
        # Fail closed: a call no one can find can never be approved, so it is not run either.
        logger.error(
            "tool call %s of MCP server %s requires approval and could not be recorded (%s); it was not run",
            trace.name,
            trace.server,
            exc.for_log(),
        )
        return ToolResult(told.not_held(trace.origin, trace.name, exc), True, trace.server, "failed")
    return ToolResult(
        told.held(trace.origin, trace.name, call_id), False, trace.server, "awaiting_approval", call_id
    )


def _queue(trace: _Trace, call: NewCall, wall: WallClock) -> ToolResult:
    """Write the call's row ``queued`` for a worker (``tools.enqueue``); nothing is sent here."""
    trace.state = "held"
    try:
        # Queued at the database's clock: the worker's claim and the reaper judge its budget there.
        call_id = ledger.open_call(call, ToolCallStatus.QUEUED, decisions.approval_moment(wall))
    except LedgerUnavailable as exc:
        # A row no worker can find would never run: the call is not queued either.
        _lost(trace, call, exc)
        telemetry.note_error("not_recorded")
        where = trace.origin or f"local tool {trace.name!r}"
        return ToolResult(told.not_recorded(where, trace.name, exc), True, trace.server, "failed")
    text = f"Tool call {call_id} ({trace.name}) is queued for a worker; its outcome is recorded when it ends."
    return ToolResult(text, False, trace.server, "queued", call_id)


def _run_recorded(trace: _Trace, call: NewCall, run: Callable[[], _Ran], wall: WallClock) -> ToolResult:
    """Commit the call's running row, then run it; a row that cannot be written stops it unsent."""
    try:
        trace.call_id = ledger.open_call(call, ToolCallStatus.RUNNING, wall())
    except LedgerUnavailable as exc:
        _lost(trace, call, exc)
        trace.state = "refused"
        telemetry.note_error("not_recorded")
        where = trace.origin or f"local tool {trace.name!r}"
        return ToolResult(told.not_recorded(where, trace.name, exc), True, trace.server, "failed")
    trace.state = "recorded"
    return _finish(trace, run, time.monotonic(), wall)


def _finish(trace: _Trace, run: Callable[[], _Ran], started: float, wall: WallClock) -> ToolResult:
    try:
        ran = run()
    except BaseException as exc:
        if not isinstance(exc, Exception) and trace.running:
            # Interrupted (KeyboardInterrupt, SystemExit, a CancelledError thrown into this
            # thread): the call may have been sent, so the row says so instead of "running".
            where = trace.origin or repr(trace.name)
            text = told.interrupted(where, trace.name, exc)
            kind = ledger.may_have_run_kind("interrupted")
            _record_outcome(trace, _Ran(ToolResult(text, True, trace.server, "failed"), kind), started, wall)
        raise
    finally:
        if trace.lease is not None:
            trace.lease.release()
        if not trace.running:
            health.write(_taken_stamps(trace))  # no outcome write to ride in
    telemetry.note_error(ran.error_kind)
    if trace.running and ran.pending is None:
        _record_outcome(trace, ran, started, wall)
    elif ran.pending is not None:
        health.write(_taken_stamps(trace))  # the row stays running: its task goes on
    return dataclasses.replace(ran.result, call_id=trace.call_id)


def _taken_stamps(trace: _Trace) -> list[health.Stamp]:
    """The call's stamps, taken off the trace: whoever takes them writes them, once."""
    stamps, trace.stamps = trace.stamps, []
    return stamps


def _record_outcome(trace: _Trace, ran: _Ran, started: float, wall: WallClock) -> None:
    assert trace.call_id is not None
    trace.state = "finished"
    stamps = _taken_stamps(trace)
    # On SQLite the stamp rides in the outcome's commit (one write lock, one sync); elsewhere it
    # is handed to a writer after it: the call never waits on a server row someone else holds.
    riding = stamps if health.rides_along() else []
    try:
        ledger.finish(
            trace.call_id,
            is_error=ran.result.is_error,
            error_kind=ran.error_kind,
            duration_ms=round((time.monotonic() - started) * 1000),
            era=ran.era,
            result_text=ran.result.text,
            now=wall(),
            structured=ran.result.structured,
            also=riding,
        )
    except LedgerUnavailable as exc:
        logger.error(
            "the outcome of tool call %s (%s) was not recorded: %s", trace.call_id, trace.name, exc.for_log()
        )
        health.write(stamps)  # the contact happened all the same
        return
    if not riding:
        health.write(stamps)


def _lost(trace: _Trace, call: NewCall, exc: LedgerUnavailable) -> None:
    logger.error(
        "tool call %s%s by %r was not recorded in the ledger (arguments SHA-256 %s): %s",
        trace.name,
        f" of MCP server {trace.server}" if trace.server else "",
        call.actor.get("actor_label", ""),
        call.digest if call.canonical else "-",
        exc.for_log(),
    )


def _origin(row: McpTool) -> str:
    return f'MCP server "{row.server.name}" ({row.server.identifier})'


def _run_local(tool: LocalTool, arguments: dict[str, Any]) -> _Ran:
    try:
        value = tool.function(**arguments)
        text = encodable(value if isinstance(value, str) else json.dumps(value, default=str))
    except Exception as exc:
        # A reporting boundary: the agent loop gets a failed result; the traceback goes to
        # the log, not to the model (exception text may carry what a model must not see).
        logger.exception("local tool %s failed", tool.name)
        return _Ran(
            ToolResult(f"local tool {tool.name!r} failed ({type(exc).__name__})", True, status="failed"),
            "local_exception",
        )
    return _Ran(ToolResult(text, False))


def _run_remote(
    trace: _Trace,
    row: McpTool,
    arguments: dict[str, Any],
    client: ToolCaller | None,
    user_id: int | None,
    responder: elicit.Responder | None = None,
    on_progress: ProgressListener | None = None,
    budget: float | None = None,
    task: TaskOptions | None = None,
    follow: TaskState | None = None,
    keep_pending: bool = False,
) -> _Ran:
    server = row.server
    origin = _origin(row)
    access = actors.resolve_user(server, user_id)
    if isinstance(access, actors.NeedsAuthorization):
        # The grant went (disconnected, revoked) since the call was asked for: nothing is sent.
        kind, _, result = _needs(access, row)
        return _Ran(result, kind)
    endpoint = access if budget is None else dataclasses.replace(access, budget_seconds=budget)
    elicitor = elicit.responder_for(responder, server.identifier)
    trace.secret = endpoint.credential
    era = kind = ""
    caller = client or mcp_client()
    if follow is None:
        # Following a task polls a call the server accepted: it takes no place, and "could not
        # run" would be untrue of it.
        lease = trace.lease = _lease(row, endpoint.budget_seconds)
        if lease.refusal:
            text = told.could_not_run(origin, row.remote_name, lease.refusal)
            return _Ran(ToolResult(text, True, server.identifier, "failed"), "no_place")
        # Waiting for the place spent part of the budget: the send gets what is left.
        endpoint = dataclasses.replace(endpoint, budget_seconds=lease.budget)
    trace.state = "sent"
    try:
        # The client's health stamp goes with the outcome's ledger write (_record_outcome).
        with health.carried() as stamps:
            try:
                # The imported schema goes along: a 2026-07-28 server reads x-mcp-header arguments
                # as headers.
                options: dict[str, Any] = {"input_schema": row.input_schema}
                if elicitor is not None:
                    # Only when given: a site's test double need not know the parameter.
                    options["responder"] = elicitor
                if on_progress is not None:
                    options["on_progress"] = on_progress
                task = _task_options(row, task)
                if follow is not None:
                    # The server accepted the call already: its task is followed, the call not sent.
                    follower = cast(TaskFollower, caller)
                    outcome = follower.poll_task(endpoint, follow, row.remote_name, options=task)
                else:
                    if task is not None:
                        options["task"] = task
                    outcome = caller.call_tool(endpoint, row.remote_name, arguments, **options)
            finally:
                trace.stamps += stamps
    except McpTransportError as exc:
        authorization.observe(server, exc, user_id=user_id)
        kind, is_error = exc.kind, True
        if elicit.needs_input(elicitor, exc):
            text = told.needs_input(origin, row.remote_name)
            return _Ran(ToolResult(text, True, server.identifier, "needs_input"), "needs_input")
        if isinstance(exc, TaskError) and exc.kind == "task_pending" and keep_pending and exc.task:
            text = f"{origin} is running {row.remote_name!r} as MCP task {clean(exc.task.task_id, 100)}"
            return _Ran(ToolResult(text, False, server.identifier, "running"), pending=exc.task)
        if authorization.needs_operator(exc):
            text = authorization.unavailable_text(server, row.tool_name, exc)
        elif isinstance(exc, TaskError) and exc.kind == "task_failed":
            # The server says the task failed: a failure it reported, not an unknown outcome.
            text = told.reported_error(origin, str(exc))
        elif may_have_run(exc):
            # "Could not run" would invite the loop to run it again.
            kind = ledger.may_have_run_kind(exc.kind)
            text = told.may_have_run(origin, row.remote_name, exc)
            if isinstance(exc, TaskError) and exc.task is not None:
                text += f" (MCP task {clean(exc.task.task_id, 100)})"
        else:
            text = told.could_not_run(origin, row.remote_name, exc)
    else:
        # Checked against the schema the operator enabled, not one the server might send now.
        outcome = conform_outcome(outcome, row.output_schema)
        # A model must not read this installation's secret, even when a server echoes it.
        outcome = masked_outcome(outcome, lambda text: redact(text, endpoint.credential))
        is_error, era = outcome.is_error, outcome.era
        kind = ("invalid_result" if outcome.mismatch else "tool_error") if is_error else ""
        text = told.reported_error(origin, outcome.text) if is_error else outcome.text
        if outcome.mismatch:
            text = told.unreliable(origin, row.remote_name, outcome.text)
        status: ToolStatus = (
            "needs_input" if elicit.needs_input(elicitor) else ("failed" if is_error else "succeeded")
        )
        result = ToolResult(
            text, is_error, server.identifier, status, content=outcome.content, structured=outcome.structured
        )
        # A resource link in the answer is readable from this server (resources.read).
        remember_links(server.identifier, outcome.content)
        return _Ran(result, kind, era)
    # A failure's text may quote the secret too (a server's error message).
    return _Ran(ToolResult(redact(text, endpoint.credential), True, server.identifier, "failed"), kind, era)


def _lease(row: McpTool, budget: float) -> leases.Lease:
    """The call's place under its server's caps across the site (``governance/leases.py``)."""
    server = row.server
    annotations = row.remote_annotations if isinstance(row.remote_annotations, dict) else {}
    return leases.take(
        server.pk,
        row.tool_name,
        cap=server.max_concurrent_calls,
        alone=row.run_alone or (server.run_writes_alone and annotations.get("readOnlyHint") is not True),
        writes_alone=server.run_writes_alone,
        budget=budget,
    )


def _task_options(row: McpTool, given: TaskOptions | None) -> TaskOptions | None:
    """A task is asked for when the tool lists it (2025-11-25 form), or by a worker that keeps it."""
    support = row.task_support if row.task_support in ("optional", "required") else None
    if given is not None:
        return dataclasses.replace(given, task_support=support)
    return TaskOptions(task_support=support) if support else None


def _unexpected(trace: _Trace, exc: Exception, wall: WallClock) -> ToolResult:
    """The reporting boundary: whatever escaped is a failed result naming the server."""
    # Formatted here, not by the handler, so the server's credential is masked in it.
    logger.error(
        "tool call %s%s failed unexpectedly\n%s",
        trace.name or "(unnamed)",
        f" of MCP server {trace.server}" if trace.server else "",
        redact(traceback.format_exc(), trace.secret).rstrip(),
    )
    where = trace.origin or (f"tool {trace.name!r}" if trace.name else "the tool call")
    sent = trace.state == "sent"
    kind = ledger.may_have_run_kind("internal") if sent else "internal"
    text = told.unexpected(where, trace.name, exc, sent=sent)
    result = ToolResult(text, True, trace.server, "failed", trace.call_id)
    try:
        if trace.running:
            _record_outcome(trace, _Ran(result, kind), time.monotonic(), wall)
        elif trace.call_id is None and trace.call is not None and trace.state == "prepared":
            # Failed before its row was written: the ledger still gets one, if it can.
            call_id = ledger.open_call(
                trace.call, ToolCallStatus.FAILED, wall(), error_kind=kind, result_text=text
            )
            result = dataclasses.replace(result, call_id=call_id)
    except Exception:
        logger.warning(
            "the failure of tool call %s was not recorded", trace.call_id or trace.name, exc_info=True
        )
    return result


# -- resume ----------------------------------------------------------------------------


def _resume(trace: _Trace, call_id: object, client: ToolCaller | None, wall: WallClock) -> ToolResult:
    try:
        pk = decisions.parse_call_id(call_id)
    except DecisionRefused as exc:
        return ToolResult(f"{exc} Nothing was run.", True, "", "failed")
    try:
        claim = decisions.claim(pk, wall)
    except LedgerUnavailable as exc:
        return ToolResult(
            f"Tool call {pk} could not be resumed: {exc}; nothing was run.", True, "", "failed", pk
        )
    if claim is None:
        return ToolResult(f"There is no tool call {pk}; nothing was run.", True, "", "failed")
    call = claim.call
    trace.name, trace.server, trace.call_id = call.tool_name, call.server_identifier, pk
    telemetry.describe(
        call.tool_name,
        call.server_identifier,
        call.data_class,
        call.data_class_ceiling,
        True,
        lambda: ledger.arguments_of(call),
    )
    if not claim.claimed:
        return told.as_recorded(call)
    return _run_claimed(trace, call, client, wall, approved=True)


def run_claimed(
    call: ToolCall,
    *,
    approved: bool,
    client: ToolCaller | None = None,
    on_progress: ProgressListener | None = None,
    budget: float | None = None,
    clock: WallClock | None = None,
    task: TaskOptions | None = None,
    keep_pending: bool = False,
) -> ToolResult:
    """Run ``call``, a row this worker moved to running (``governance/queued.py``), as ``resume``
    runs an approved one; its outcome is recorded, and it never raises.

    ``approved``: it was claimed from ``approved`` (its digest must still match); otherwise from
    ``queued``, and a server that came to require approval since it was queued refuses it.
    ``task``: asks for an MCP task and hears its states; ``keep_pending``: a task still running
    when the budget ends leaves the row running (status "running") for ``follow_claimed``.
    """
    trace = _Trace(call.tool_name, server=call.server_identifier, call_id=call.id)
    wall = clock or timezone.now
    remote = {"on_progress": on_progress, "budget": budget, "task": task, "keep_pending": keep_pending}
    try:
        return _run_claimed(trace, call, client, wall, approved=approved, remote=remote)
    except Exception as exc:
        return _unexpected(trace, exc, wall)


def _run_claimed(
    trace: _Trace,
    call: ToolCall,
    client: ToolCaller | None,
    wall: WallClock,
    *,
    approved: bool,
    remote: dict[str, Any] | None = None,
) -> ToolResult:
    # From here the call is this caller's alone: every way out records how it ended.
    trace.state = "recorded"
    started = time.monotonic()
    canonical = credentials.decrypt(call.arguments_ciphertext) if call.arguments_ciphertext else ""
    pk = call.id
    local = local_tool(call.tool_name) if call.tool_id is None and not approved else None
    if local is not None:
        given = json.loads(canonical) if canonical else {}
        return _finish(trace, lambda: _run_local(local, given), started, wall)
    if approved and (not call.approved_digest or ledger.digest_of(canonical) != call.approved_digest):
        return _end_refused(
            trace,
            "digest_mismatch",
            f"tool call {pk} has other arguments than the ones approved; it was not run",
            started,
            wall,
        )
    row = McpTool.objects.select_related("server").filter(pk=call.tool_id).first() if call.tool_id else None
    if row is not None:
        trace.origin = _origin(row)
    changed = _changed_since(call, row)
    if changed:
        return _end_refused(
            trace,
            "changed_since_approval",
            f"tool call {pk} was not run: {changed} since the call was made",
            started,
            wall,
        )
    assert row is not None
    refusal = _refusal(row, call.data_class_ceiling or ceilings.resolve(None))
    if refusal is not None:
        return _end_refused(trace, *refusal, started, wall)
    if not approved and row.server.requires_approval:
        return _end_refused(
            trace,
            "requires_approval",
            f"tool call {pk} was not run: its server came to require approval since it was queued",
            started,
            wall,
        )
    arguments = json.loads(canonical) if canonical else {}
    user_id = call.actor_user_id
    return _finish(
        trace,
        lambda: _run_remote(trace, row, arguments, client, user_id, **(remote or {})),
        started,
        wall,
    )


def follow_claimed(
    call: ToolCall,
    state: TaskState,
    *,
    task: TaskOptions,
    budget: float,
    keep_pending: bool,
    client: TaskFollower | None = None,
    clock: WallClock | None = None,
) -> ToolResult:
    """Follow the MCP task of ``call``, a running row whose task lease this worker holds: the
    task is polled and its result read, the call is never sent again; the outcome is recorded
    as ``run_claimed`` records it (a task still running with ``keep_pending``: status "running")."""
    trace = _Trace(call.tool_name, server=call.server_identifier, call_id=call.id, state="sent")
    wall = clock or timezone.now
    try:
        row = (
            McpTool.objects.select_related("server").filter(pk=call.tool_id).first() if call.tool_id else None
        )
        if row is None:
            text = f"tool call {call.id} may have run: its tool left the catalogue while its MCP task ran"
            ran = _Ran(ToolResult(text, True, trace.server, "failed"), ledger.may_have_run_kind("task_lost"))
            return _finish(trace, lambda: ran, time.monotonic(), wall)
        trace.origin = _origin(row)
        caller = cast(ToolCaller, client)
        found, user_id = row, call.actor_user_id
        return _finish(
            trace,
            lambda: _run_remote(
                trace,
                found,
                {},
                caller,
                user_id,
                budget=budget,
                task=task,
                follow=state,
                keep_pending=keep_pending,
            ),
            time.monotonic(),
            wall,
        )
    except Exception as exc:
        return _unexpected(trace, exc, wall)


def _changed_since(call: ToolCall, row: McpTool | None) -> str:
    """What differs from the tool the approver was shown; "" when it is the same."""
    if row is None:
        return "the tool is no longer in the catalogue"
    if (row.tool_name, row.remote_name, row.server.identifier) != (
        call.tool_name,
        call.remote_name,
        call.server_identifier,
    ):
        return "the tool was renamed or moved to another server"
    if row.description != call.tool_description or row.input_schema != call.tool_input_schema:
        return "the tool's description or input schema changed"
    return ""


def _end_refused(trace: _Trace, kind: str, text: str, started: float, wall: WallClock) -> ToolResult:
    return _finish(trace, lambda: _Ran(ToolResult(text, True, trace.server, "failed"), kind), started, wall)
