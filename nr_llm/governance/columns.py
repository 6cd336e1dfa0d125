"""What the Tool calls and Approvals pages show, as functions of a row and a clock.

Kept out of the admin classes so each cell is testable with a fixed ``now`` and no request.
Everything that came from a caller, a model or a remote server is escaped by ``format_html``.
"""

from __future__ import annotations

from datetime import datetime

from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince, timeuntil

from . import ledger
from .models import PENDING, ToolCall, ToolCallStatus

#: States an operator should not miss in the list.
ALARMING = (ToolCallStatus.FAILED, ToolCallStatus.DENIED, ToolCallStatus.EXPIRED)
DIGEST_SHOWN = 12


def when(call: ToolCall, now: datetime) -> SafeString:
    """The call's time; beneath, how long it ran, or how long it may still wait."""
    stamp = f"{call.created:%Y-%m-%d %H:%M:%S}"
    if call.duration_ms is not None:
        detail = f"ran {call.duration_ms} ms"
    elif call.status in PENDING and call.expires_at:
        detail = _expires(call.expires_at, now)
    else:
        detail = ""
    return (
        format_html('{}<div class="nr-llm-detail">{}</div>', stamp, detail)
        if detail
        else format_html("{}", stamp)
    )


def tool(call: ToolCall) -> SafeString:
    """The local tool name; beneath, the server and the remote name (a local tool has neither)."""
    if not call.server_identifier:
        # A name no tool has is not a local tool: say which it was.
        kind = "unknown tool" if call.error_kind == "unknown_tool" else "local tool"
        return format_html('{}<div class="nr-llm-detail">{}</div>', call.tool_name, kind)
    return format_html(
        '{}<div class="nr-llm-detail">{} · {}</div>', call.tool_name, call.server_identifier, call.remote_name
    )


def status(call: ToolCall, now: datetime) -> SafeString:
    """The state (alarming ones in the warning colour); beneath, why or by whom.

    A failed call that may have run reads "May have run": "Failed" would tell an operator the
    tool did not act, which nothing proved (ledger.may_have_run)."""
    label = "May have run" if ledger.may_have_run(call) else call.get_status_display()
    head = (
        format_html('<strong class="nr-llm-warning">{}</strong>', label)
        if call.status in ALARMING
        else format_html("<strong>{}</strong>", label)
        if call.status == ToolCallStatus.AWAITING_APPROVAL
        else format_html("{}", label)
    )
    parts: list[str] = []
    if call.status == ToolCallStatus.DENIED and call.approver_label:
        parts.append(f"by {call.approver_label}")
    elif call.approved_digest and call.approver_label:
        parts.append(f"{'self-approved' if call.self_approved else 'approved'} by {call.approver_label}")
    if call.error_kind and call.status != ToolCallStatus.EXPIRED:
        parts.append(call.error_kind)
    if not parts:
        return head
    return format_html('{}<div class="nr-llm-detail">{}</div>', head, " · ".join(parts))


def digest(call: ToolCall) -> SafeString:
    if not call.arguments_digest:
        return format_html("{}", "none (the arguments could not be encoded)")
    return format_html("<code>{}</code>", call.arguments_digest)


def _expires(moment: datetime, now: datetime) -> str:
    if moment <= now:
        return f"expired {timesince(moment, now, depth=1)} ago"
    return f"expires in {timeuntil(moment, now, depth=1)}"


def progress(call: ToolCall) -> str:
    """The latest progress its server reported (a call on a worker), or why there is none."""
    if call.progress is None:
        return "none reported" if call.on_worker else "not kept (the call did not run on a worker)"
    of = f" of {call.progress_total:g}" if call.progress_total is not None else ""
    share = (
        f" ({call.progress / call.progress_total:.0%})"
        if call.progress_total and 0 <= call.progress <= call.progress_total
        else ""
    )
    said = f" · {call.progress_message}" if call.progress_message else ""
    return f"{call.progress:g}{of}{share}{said}"
