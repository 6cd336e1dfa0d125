"""Where an admin import is: queued, running or done. Writes are keyed by the task's token, so
a late older task leaves a newer import's state alone."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.utils import timezone

from ..models import ImportStatus, ImportTaskState, McpServer

logger = logging.getLogger("nr_llm.import_state")

#: Nothing clears "running" when a worker dies, so a run past its budget and this is stalled.
STALL_GRACE = timedelta(minutes=2)


def mark_queued(server: McpServer) -> str:
    token = uuid.uuid4().hex
    McpServer.objects.filter(pk=server.pk).update(
        import_task_state=ImportTaskState.QUEUED, import_task_since=timezone.now(), import_task_token=token
    )
    return token


def mark_running(server_pk: int, token: str) -> None:
    _move(server_pk, token, ImportTaskState.RUNNING)


def mark_idle(server_pk: int, token: str) -> None:
    """The task is over (done, crashed, or never enqueued)."""
    _move(server_pk, token, ImportTaskState.IDLE)


def mark_crashed(server_pk: int, token: str, failure: str) -> None:
    """A task that raised: its outcome is an error; the catalogue was not touched by it."""
    reason = f"the import task failed ({failure}); nothing was changed; see the worker's log"
    try:
        McpServer.objects.filter(pk=server_pk, import_task_token=token).update(
            import_status=ImportStatus.ERROR,
            import_error=reason,
            import_task_state=ImportTaskState.IDLE,
            import_task_since=timezone.now(),
        )
    except Exception:
        # A reporting boundary: the task's own failure is what the backend must record.
        logger.warning("could not record the failed import of MCP server #%s", server_pk, exc_info=True)


def _move(server_pk: int, token: str, state: ImportTaskState) -> None:
    McpServer.objects.filter(pk=server_pk, import_task_token=token).update(
        import_task_state=state, import_task_since=timezone.now()
    )


def stalled(state: str, since: datetime | None, budget_seconds: float, now: datetime) -> bool:
    """Whether a "running" state has outlived anything its import could still be doing."""
    if state != ImportTaskState.RUNNING or since is None:
        return False
    return now - since > timedelta(seconds=budget_seconds) + STALL_GRACE
