"""``cancel_task``: ask a server to stop the MCP task a worker's call waits on (the admin's button).

One ``tasks/cancel``, an operation of its own with the server's budget: nothing of this process
is aborted, the server is asked and decides. Its answer (the task's state then) is kept
on the row; the worker following the task reads the end on its next poll and records it
(``task_cancelled``), so the call's outcome is written in one place only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..authorization import actors
from ..governance import call_tasks
from ..governance.decisions import DecisionRefused, parse_call_id
from ..governance.models import ToolCall, ToolCallStatus
from ..mcp import McpTransportError, clean, redact
from ..models import McpTool
from ..servers.endpoints import mcp_client


@dataclass(frozen=True)
class CancelReport:
    """What the server answered: ``status`` is the task's state after the request ("" when the
    request failed or was not made), ``text`` the sentence an operator reads."""

    ok: bool
    status: str
    text: str


def cancel_task(call_id: object) -> CancelReport:
    """Ask the server of ``call_id``'s MCP task to cancel it; never raises for the server's failure."""
    try:
        pk = parse_call_id(call_id)
    except DecisionRefused as exc:
        return CancelReport(False, "", str(exc))
    call = ToolCall.objects.filter(pk=pk).first()
    state = call_tasks.state_of(call) if call is not None else None
    if call is None or state is None or call.status != ToolCallStatus.RUNNING:
        return CancelReport(False, "", f"Tool call {pk} waits on no running MCP task; nothing was sent.")
    row = McpTool.objects.select_related("server").filter(pk=call.tool_id).first() if call.tool_id else None
    if row is None:
        return CancelReport(False, "", f"Tool call {pk}'s tool left the catalogue; nothing was sent.")
    access = actors.resolve_user(row.server, call.actor_user_id)
    if isinstance(access, actors.NeedsAuthorization):
        return CancelReport(False, "", f"Tool call {pk}'s actor has no usable grant; nothing was sent.")
    task = clean(state.task_id, 100)
    try:
        after = mcp_client().cancel_task(access, state, row.remote_name)
    except McpTransportError as exc:
        why = redact(clean(str(exc), 500), access.credential)
        return CancelReport(False, "", f"MCP task {task} of tool call {pk} was not cancelled: {why}")
    call_tasks.TaskRecorder(pk)(after)
    said = f" ({clean(after.status_message, 200)})" if after.status_message else ""
    return CancelReport(
        after.status == "cancelled",
        after.status,
        f"MCP server {row.server.identifier} was asked to cancel task {task} of tool call {pk}; "
        f"the task is now {after.status}{said}.",
    )
