"""What the model is told of a call: every text a tool result carries, true to what happened.

"Could not run" only when the call was never sent or the server's answer proves it refused
before running (``resend.may_have_run`` decides); otherwise "may have run" and what to do about
it. Texts name the server and the tool, never a credential (callers mask it) nor the
database's own words (``LedgerUnavailable`` names the error's type only).
"""

from __future__ import annotations

import re

from ..governance import ledger, preview
from ..governance.models import ToolCall, ToolCallStatus
from ..mcp import clean
from .results import ToolResult, ToolStatus

#: What a model is told to do about a call that may have run.
MAY_HAVE_RUN = (
    ": it was sent and no answer proves it was refused; do not assume it failed, and check its "
    "effect before calling it again"
)


def could_not_run(origin: str, remote: str, why: object) -> str:
    return f"{origin} could not run {remote!r}: {why}"


#: The client's own "may have run" sentence: this text says it already, once is enough.
_CLIENTS_SENTENCE = re.compile(r"\s*The tool (?:'[^']*' )?may have run; the call is not sent again\.")


def may_have_run(origin: str, remote: str, why: object) -> str:
    reason = _CLIENTS_SENTENCE.sub("", str(why)).strip()
    return f"{origin} may have run {remote!r}{MAY_HAVE_RUN}: {reason}"


def reported_error(origin: str, text: str) -> str:
    return f"{origin} reported an error: {text}"


def unreliable(origin: str, remote: str, why: str) -> str:
    return f"{origin} ran {remote!r}, but {why}; do not rely on its answer"


def not_recorded(origin: str, name: str, why: object) -> str:
    """A call whose running row could not be written: it was not sent."""
    return (
        f"{origin} could not run {name!r}: the call could not be recorded in the ledger ({why}); "
        "it was not sent"
    )


def held(origin: str, name: str, call_id: object) -> str:
    return (
        f"{origin} requires an operator's approval for {name!r}: the call is recorded as tool "
        f"call {call_id} and has not run. It runs when it is approved and resumed; do not call it again."
    )


def not_held(origin: str, name: str, why: object) -> str:
    return (
        f"{origin} requires an operator's approval for {name!r}, and the call could not be "
        f"recorded for one ({why}); it was not run."
    )


def interrupted(where: str, name: str, exc: BaseException) -> str:
    return (
        f"{where} may have run {name!r}: the call was interrupted in this site "
        f"({type(exc).__name__}) before its answer was read; check its effect before calling it again"
    )


def unexpected(where: str, name: str, exc: Exception, *, sent: bool) -> str:
    failure = f"an unexpected {type(exc).__name__} in this site; the details are in the site's log"
    if sent:
        # Raised after the call went to the client: the server may have run it.
        return f"{where} may have run {name!r}{MAY_HAVE_RUN} ({failure})"
    return f"{where} could not run {name!r}: {failure}"


def as_recorded(call: ToolCall) -> ToolResult:
    """A call a resume may not run, as the result a model reads."""
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
        kept = preview.preview_of(call)
        answer = f" Its recorded answer: {kept}" if kept else " Its answer was not kept."
        if ledger.may_have_run(call):
            text = (
                f"{head} may have run (no answer proved it was refused); it is not run again. Do not "
                f"assume it failed; check its effect before calling the tool again.{answer}"
            )
        else:
            text = f"{head} already ran ({call.get_status_display().lower()}); it is not run again.{answer}"
        status = "succeeded" if call.status == ToolCallStatus.SUCCEEDED else "failed"
    elif call.status == ToolCallStatus.QUEUED:
        text, status = f"{head} is queued for a worker; it has not started.", "queued"
    else:
        text, status = f"{head} is running; its outcome is recorded when it ends.", "running"
    return ToolResult(
        text, status in ("failed", "denied", "expired"), call.server_identifier, status, call.id
    )


def needs_input(origin: str, name: str) -> str:
    """A call whose server asked for input this site could not give now."""
    return (
        f"{origin} asked for input to run {name!r} that this site could not give now; the call did "
        "not finish. Ask the user for what the tool needs, then call it again."
    )
