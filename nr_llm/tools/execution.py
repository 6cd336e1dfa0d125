"""``execute`` and ``resume``: run a tool, leave a ledger row, hold a call for approval.

Neither raises: a tool's failure, a refusal, and whatever else goes wrong (a database or
credential error included) come back as an ``is_error`` result naming the server, the
traceback in the log with the server's credential masked. A tool of a server that requires
approval is not contacted by ``execute``: the call is recorded as awaiting approval and the
result says so with the call's id; ``resume(call_id)`` runs it once approved, exactly the
arguments approved, exactly once.

A ledger row that cannot be written (``LedgerUnavailable``) fails an approval-requiring call
closed (it could never be approved); any other call runs and the lost row is logged at ERROR.

A call may be prepared from the catalogue row the process read last (``lookup.remembered``):
its ledger row is then written only if the catalogue still holds that row exactly (a guard in
the same statement). Whatever else happens to such a call before anything is sent (the guard
finds a change, a refusal, the ledger cannot be written) sends it back to read the row anew
and start again, so every decision that lets a call run rests on the catalogue as it is.

What the model reads is true: a call "could not run" only when it was never sent or the
server's answer proves it refused before running (``resend.may_have_run`` decides); otherwise
it "may have run", and the ledger records the same (``ledger.may_have_run_kind``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.db import connection
from django.utils import timezone

from ..authorization import runtime as authorization
from ..governance import ceiling as ceilings
from ..governance import decisions, ledger
from ..governance.decisions import DecisionRefused
from ..governance.ledger import GuardFailed, LedgerUnavailable, NewCall, WallClock
from ..governance.models import ToolCall, ToolCallStatus
from ..governance.statements import Guard
from ..mcp import CallOutcome, Endpoint, McpClient, McpTransportError
from ..mcp.protocol import content, resend
from ..mcp.wire import first_write
from ..mcp.wire.redaction import redact
from ..mcp.wire.text import clean, encodable
from ..models import DEFINITION_CHANGED, McpTool
from ..servers import credentials, health
from ..servers.endpoints import endpoint_for, mcp_client
from . import telemetry
from .arguments import checked_arguments, refusal_text
from .lookup import forget, remembered, tool_by_name
from .registry import LocalTool, local_tool
from .results import ToolResult, ToolStatus
from .threads import refuse_in_event_loop

logger = logging.getLogger("nr_llm.tools")


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


@dataclass
class _Trace:
    """What the reporting boundary needs to name, filled in as the call goes on."""

    name: str
    server: str = ""
    origin: str = ""
    call_id: uuid.UUID | None = None
    #: The row says "running": every way out must record how it ended.
    running: bool = False
    # The server's credential, for masking it in a logged traceback; never in repr (a local of
    # every frame below execute(), which an error reporter records).
    secret: str | None = field(default=None, repr=False)
    #: ``execute``'s call as far as it is known: the boundary records it if nothing else did.
    call: NewCall | None = None
    #: The call was handed to the MCP client: from here a failure may come after it ran.
    sent: bool = False
    #: The server's health stamps of the call, written with its outcome (one write, not two).
    stamps: list[health.Stamp] = field(default_factory=list, repr=False)
    #: The call was prepared from a remembered row: its first write holds this guard.
    guard: Guard | None = field(default=None, repr=False)
    #: The call's row sent ahead of its request (``ledger.open_running``), its answer not read yet.
    opening: ledger.Opening | None = field(default=None, repr=False)
    #: The key of the call's one ledger row, kept when the call starts again from a row read
    #: anew: a first write that reported a failure but was done after all then meets the
    #: second (a conflict, so the call is treated as unrecorded) instead of leaving two rows.
    row_id: uuid.UUID = field(default_factory=uuid.uuid4)


class _Reread(first_write.Withheld):
    """A call prepared from a remembered row must read it anew and start again (nothing was
    sent, nothing written). Raised where a request would be written, it withholds it."""


@dataclass(frozen=True)
class _Ran:
    result: ToolResult
    error_kind: str = ""
    era: str = ""


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
) -> ToolResult:
    """Run a tool and return its result; a failure is an ``is_error`` result, never an exception.

    ``actor``: ``request.user`` or a label of the caller's choosing, kept in the ledger.
    ``data_class_ceiling``: the most sensitive data class the caller's model may see (None:
    ``NR_LLM_DATA_CLASS_CEILING``); a tool above it is refused, not run.
    ``tool_call_id``: the model's id of this call, for the trace (docs/telemetry.md).
    Called from a running event loop it raises ``SynchronousOnlyOperation``: await ``aexecute``.
    """
    refuse_in_event_loop("execute", "aexecute")
    trace = _Trace("")
    wall = clock or timezone.now
    try:
        # Inside the boundary: even a name that cannot be turned into text is an error result.
        trace.name = clean(name, ledger.NAME_CHARS)
        try:
            return _execute(trace, name, arguments, client, actor, data_class_ceiling, wall, fresh=False)
        except _Reread:
            assert isinstance(name, str)
            forget(name)
            telemetry.undescribe()
            trace = _Trace(trace.name, row_id=trace.row_id)
            return _execute(trace, name, arguments, client, actor, data_class_ceiling, wall, fresh=True)
    except Exception as exc:
        return _unexpected(trace, exc, wall)


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
    expired call says so, and nothing runs. ``tool_call_id`` as for ``execute``.
    """
    refuse_in_event_loop("resume", "aresume")
    trace = _Trace("")
    wall = clock or timezone.now
    try:
        return _resume(trace, call_id, client, wall)
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
    *,
    fresh: bool,
) -> ToolResult:
    if arguments is None:
        arguments = {}
    canonical, problem = _canonical(arguments)
    call = trace.call = NewCall(trace.name, canonical, ledger.actor_fields(actor))
    if not isinstance(name, str):
        # A model's malformed call (a list or object as the name) is not a lookup key.
        return _refused(trace, call, "unknown_tool", f"unknown tool {clean(name)!r}", wall)
    if problem:
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
    if local is not None:
        return _run_recorded(trace, call, lambda: _run_local(local, arguments), wall)
    row, trace.guard = _catalogue_row(name, fresh)
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
        _reread_if_remembered(trace)
        return _refused(trace, call, *refusal, wall)
    # Checked against the server's own schema before anything is sent (or held for approval).
    arguments, problems = checked_arguments(row.input_schema, arguments)
    if problems:
        _reread_if_remembered(trace)
        return _refused(trace, call, "invalid_arguments", refusal_text(name, problems), wall)
    call = trace.call = dataclasses.replace(call, canonical=ledger.canonical_json(arguments))
    if server.requires_approval:
        return _hold(trace, call, wall)
    return _run_recorded(
        trace, call, lambda: _run_remote(trace, row, arguments, client), wall, ahead=_waits_for_row(client)
    )


#: The row a turn's plan read for the call this thread runs (``turn.py``): not read twice.
_planned_row: ContextVar[McpTool | None] = ContextVar("nr_llm_planned_row", default=None)


def _catalogue_row(name: str, fresh: bool) -> tuple[McpTool | None, Guard | None]:
    """The row a call runs, and the guard its first write needs (None: the row was just read)."""
    planned = _planned_row.get()
    if planned is not None and planned.tool_name == name:
        return planned, None
    # A caller inside a transaction reads the row in it: the guard, written on another
    # connection, would not see that transaction's own changes.
    if not fresh and not connection.in_atomic_block:
        found = remembered(name)
        if found is not None:
            return found
    return tool_by_name(name), None


def _reread_if_remembered(trace: _Trace) -> None:
    """A refusal (or a lost row) decided on a remembered row is decided again on the row as it
    is: an operator may have just enabled the tool, or widened its schema."""
    if trace.guard is not None:
        raise _Reread


def _opened(trace: _Trace, call: NewCall, status: str, wall: WallClock) -> uuid.UUID:
    """``ledger.open_call`` with the trace's guard; a guard that fails sends the call back."""
    try:
        return ledger.open_call(call, status, wall(), guard=trace.guard, call_id=trace.row_id)
    except GuardFailed as exc:
        raise _Reread from exc
    except LedgerUnavailable as exc:
        if trace.guard is not None:
            raise _Reread from exc
        raise


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
    if not isinstance(arguments, dict):
        return "", "must be a JSON object"
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


def _refused(trace: _Trace, call: NewCall, kind: str, text: str, wall: WallClock) -> ToolResult:
    telemetry.note_error(kind)
    result = ToolResult(text, True, trace.server, "failed")
    try:
        call_id = ledger.open_call(
            call, ToolCallStatus.FAILED, wall(), error_kind=kind, result_text=text, call_id=trace.row_id
        )
    except LedgerUnavailable as exc:
        _lost(trace, call, exc)
        return result
    return dataclasses.replace(result, call_id=call_id)


def _hold(trace: _Trace, call: NewCall, wall: WallClock) -> ToolResult:
    try:
        call_id = _opened(trace, call, ToolCallStatus.AWAITING_APPROVAL, wall)
    except LedgerUnavailable as exc:
        # Fail closed: a call no one can find can never be approved, so it is not run either.
        logger.error(
            "tool call %s of MCP server %s requires approval and could not be recorded (%s); it was not run",
            trace.name,
            trace.server,
            exc.for_log(),
        )
        return ToolResult(
            f"{trace.origin} requires an operator's approval for {trace.name!r}, and the call could not be "
            f"recorded for one ({exc}); it was not run.",
            True,
            trace.server,
            "failed",
        )
    return ToolResult(
        f"{trace.origin} requires an operator's approval for {trace.name!r}: the call is recorded as tool "
        f"call {call_id} and has not run. It runs when it is approved and resumed; do not call it again.",
        False,
        trace.server,
        "awaiting_approval",
        call_id,
    )


def _run_recorded(
    trace: _Trace, call: NewCall, run: Any, wall: WallClock, *, ahead: bool = False
) -> ToolResult:
    # The row is committed before the call can reach the server. ``ahead``: the client reads the
    # row's answer where it would write the request (``_settle``), so on PostgreSQL the database
    # writes it while the client builds the request (``governance.ahead``). Writing it on another
    # thread beside the building was tried and measured slower: the two halves share one
    # interpreter lock, where this leaves the waiting to the socket.
    opening = ledger.open_running(
        call, wall(), guard=trace.guard, call_id=trace.row_id, ahead_of_request=ahead
    )
    if opening.sent is not None:
        trace.opening = opening
    else:
        _settled(trace, call, opening)
    return _finish(trace, run, time.monotonic(), wall)


def _settled(trace: _Trace, call: NewCall, opening: ledger.Opening) -> None:
    """How the call's first write ended: a guard that failed (or a lost guarded row) sends the
    call back to read its row anew, before anything is sent; any other lost row is logged and
    the call goes on (it needs no approval)."""
    try:
        trace.call_id = opening.settle()
        trace.running = True
    except GuardFailed as exc:
        raise _Reread from exc
    except LedgerUnavailable as exc:
        if trace.guard is not None:
            raise _Reread from exc
        _lost(trace, call, exc)


def _settle(trace: _Trace) -> None:
    """The row sent ahead, settled once (``_settled``); what it decided stands for every later
    request of the call (first_write asks before each)."""
    opening = trace.opening
    if opening is None:
        return
    if opening.sent is not None:
        assert trace.call is not None
        _settled(trace, trace.call, opening)
    elif trace.call_id is None and trace.guard is not None:
        raise _Reread  # it sent the call back already: nothing of it may be written now


def _waits_for_row(client: ToolCaller | None) -> bool:
    """The client writes its requests through ``mcp.wire`` (which asks ``first_write`` first):
    nr_llm's own, not a site's ToolCaller, which knows no such hook."""
    return client is None or type(client).call_tool is McpClient.call_tool


def _finish(trace: _Trace, run: Any, started: float, wall: WallClock) -> ToolResult:
    try:
        try:
            ran: _Ran = run()
        finally:
            # A row sent ahead whose answer the client never read (it failed, or wrote nothing):
            # read now. A guard that failed then means nothing was sent: the call starts again.
            _settle(trace)
    except BaseException as exc:
        if not isinstance(exc, Exception) and trace.call_id is not None and trace.running:
            # Interrupted (KeyboardInterrupt, SystemExit, a CancelledError thrown into this
            # thread): the call may have been sent, so the row says so instead of "running".
            _record_outcome(trace, _interrupted(trace, exc), started, wall)
        raise
    finally:
        if trace.call_id is None or not trace.running:
            _write_stamps(trace)  # no outcome write to ride in
    telemetry.note_error(ran.error_kind)
    if trace.call_id is not None and trace.running:
        _record_outcome(trace, ran, started, wall)
    return dataclasses.replace(ran.result, call_id=trace.call_id)


def _taken_stamps(trace: _Trace) -> list[health.Stamp]:
    """The call's stamps, taken off the trace: whoever takes them writes them, once."""
    stamps, trace.stamps = trace.stamps, []
    return stamps


def _write_stamps(trace: _Trace) -> None:
    health.write(_taken_stamps(trace))


def _record_outcome(trace: _Trace, ran: _Ran, started: float, wall: WallClock) -> None:
    assert trace.call_id is not None
    trace.running = False
    stamps = _taken_stamps(trace)
    # On SQLite the stamp rides in the outcome's write: one commit instead of two. On
    # PostgreSQL it is handed over after it, not waited for (``health.rides_along``).
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


def _interrupted(trace: _Trace, exc: BaseException) -> _Ran:
    text = (
        f"{trace.origin or repr(trace.name)} may have run {trace.name!r}: the call was interrupted "
        f"in this site ({type(exc).__name__}) before its answer was read; check its effect before "
        "calling it again"
    )
    return _Ran(ToolResult(text, True, trace.server, "failed"), ledger.may_have_run_kind("interrupted"))


def _origin(row: McpTool) -> str:
    return f'MCP server "{row.server.name}" ({row.server.identifier})'


#: What a model is told to do about a call that may have run.
MAY_HAVE_RUN = (
    ": it was sent and no answer proves it was refused; do not assume it failed, and check its "
    "effect before calling it again"
)


def _run_local(tool: LocalTool, arguments: dict[str, Any]) -> _Ran:
    try:
        value = tool.function(**arguments)
        text = encodable(value if isinstance(value, str) else json.dumps(value, default=str))
    except Exception as exc:
        # A reporting boundary: the agent loop gets a failed result; the traceback goes to
        # the log, not to the model (exception text may carry what a model must not see).
        logger.exception("local tool %s failed", tool.name)
        return _Ran(
            ToolResult(f"local tool {tool.name!r} failed ({type(exc).__name__})", True), "local_exception"
        )
    return _Ran(ToolResult(text, False))


def _run_remote(trace: _Trace, row: McpTool, arguments: dict[str, Any], client: ToolCaller | None) -> _Ran:
    server = row.server
    origin = _origin(row)
    endpoint = endpoint_for(server)
    trace.secret = endpoint.credential
    era = kind = ""
    caller = client or mcp_client()
    trace.sent = True
    try:
        # The client's health stamp goes with the outcome's ledger write (_record_outcome).
        with health.carried() as stamps:
            try:
                # The imported schema goes along: a 2026-07-28 server reads x-mcp-header arguments
                # as headers.
                with first_write.waiting_for(lambda: _settle(trace)):
                    outcome = caller.call_tool(
                        endpoint, row.remote_name, arguments, input_schema=row.input_schema
                    )
            finally:
                trace.stamps += stamps
    except McpTransportError as exc:
        authorization.observe(server, exc)
        kind, is_error = exc.kind, True
        if authorization.needs_operator(exc):
            text = authorization.unavailable_text(server, row.tool_name, exc)
        elif resend.may_have_run(exc):
            # "Could not run" would invite the loop to run it again.
            kind = ledger.may_have_run_kind(exc.kind)
            text = f"{origin} may have run {row.remote_name!r}{MAY_HAVE_RUN}: {exc}"
        else:
            text = f"{origin} could not run {row.remote_name!r}: {exc}"
    else:
        # Checked against the schema the operator enabled, not one the server might send now.
        outcome = content.conform(outcome, row.output_schema)
        # A model must not read this installation's secret, even when a server echoes it.
        outcome = content.masked(outcome, lambda text: redact(text, endpoint.credential))
        is_error, era = outcome.is_error, outcome.era
        kind = ("invalid_result" if outcome.mismatch else "tool_error") if is_error else ""
        text = f"{origin} reported an error: {outcome.text}" if is_error else outcome.text
        if outcome.mismatch:
            text = f"{origin} ran {row.remote_name!r}, but {outcome.text}; do not rely on its answer"
        result = ToolResult(
            text, is_error, server.identifier, content=outcome.content, structured=outcome.structured
        )
        return _Ran(result, kind, era)
    # A failure's text may quote the secret too (a server's error message).
    return _Ran(ToolResult(redact(text, endpoint.credential), is_error, server.identifier), kind, era)


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
    failure = f"an unexpected {type(exc).__name__} in this site; the details are in the site's log"
    kind = "internal"
    if trace.sent:
        # Raised after the call went to the client: the server may have run it.
        kind = ledger.may_have_run_kind(kind)
        text = f"{where} may have run {trace.name!r}{MAY_HAVE_RUN} ({failure})"
    else:
        text = f"{where} could not run {trace.name!r}: {failure}"
    result = ToolResult(text, True, trace.server, "failed", trace.call_id)
    try:
        if trace.call_id is not None and trace.running:
            _record_outcome(trace, _Ran(result, kind), time.monotonic(), wall)
        elif trace.call_id is None and trace.call is not None:
            # Failed before its row was written: the ledger still gets one, if it can.
            call_id = ledger.open_call(
                trace.call,
                ToolCallStatus.FAILED,
                wall(),
                error_kind=kind,
                result_text=text,
                call_id=trace.row_id,
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
        return _as_recorded(call)
    # From here the call is this caller's alone: every way out records how it ended.
    trace.running = True
    started = time.monotonic()
    canonical = credentials.decrypt(call.arguments_ciphertext) if call.arguments_ciphertext else ""
    if not call.approved_digest or ledger.digest_of(canonical) != call.approved_digest:
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
    arguments = json.loads(canonical) if canonical else {}
    return _finish(trace, lambda: _run_remote(trace, row, arguments, client), started, wall)


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
    return _finish(trace, lambda: _Ran(ToolResult(text, True, trace.server), kind), started, wall)


def _as_recorded(call: ToolCall) -> ToolResult:
    """A call this resume may not run, as the result a model reads."""
    head = f"Tool call {call.id} ({call.tool_name})"
    status: ToolStatus
    if call.status == ToolCallStatus.AWAITING_APPROVAL:
        text, status = f"{head} still awaits an operator's approval; it has not run.", "awaiting_approval"
    elif call.status == ToolCallStatus.DENIED:
        note = f": {clean(call.decision_note)}" if call.decision_note else ""
        who = call.approver_label or "an operator"
        text = f"{head} was denied by {who}{note}. It did not run and will not; continue without it."
        status = "denied"
    elif call.status == ToolCallStatus.EXPIRED:
        text = (
            f"{head} expired before it was approved and resumed; it did not run. "
            "A new call needs a new approval."
        )
        status = "expired"
    elif call.status in (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED):
        kept = ledger.preview_of(call)
        answer = f" Its recorded answer: {kept}" if kept else " Its answer was not kept."
        if ledger.may_have_run(call):
            text = (
                f"{head} may have run (no answer proved it was refused); it is not run again. Do not "
                f"assume it failed; check its effect before calling the tool again.{answer}"
            )
        else:
            text = f"{head} already ran ({call.get_status_display().lower()}); it is not run again.{answer}"
        status = "succeeded" if call.status == ToolCallStatus.SUCCEEDED else "failed"
    else:
        text, status = f"{head} is running; its outcome is recorded when it ends.", "running"
    return ToolResult(
        text, status in ("failed", "denied", "expired"), call.server_identifier, status, call.id
    )
