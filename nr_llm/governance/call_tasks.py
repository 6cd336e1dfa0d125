"""Keep a worker's MCP task on its ledger row, so any worker can resume polling it.

Once a server answers ``tools/call`` with a task, only the task is followed and the call is
never sent again. One worker at a time holds the row's lease (on the database's clock); a
killed worker's lease runs out and the next scheduled delivery takes over.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from ..mcp import TaskState
from ..servers import credentials
from . import decisions, ledger
from .models import ToolCall, ToolCallStatus

logger = logging.getLogger("nr_llm.governance")

#: Encrypted at rest: a session id lets its holder speak in that session.
SECRET_PARTS = ("session_id", "request_state")
#: A poll may overrun its budget by under a second, plus the write after it.
LEASE_MARGIN_SECONDS = 5.0


def stored(state: TaskState) -> tuple[dict[str, Any], str]:
    """(the row's ``task_state``, its ``task_secret_ciphertext``) for ``state``."""
    data = state.as_dict()
    secret = {part: data.pop(part) for part in SECRET_PARTS if data.get(part) is not None}
    for part in SECRET_PARTS:
        data.pop(part, None)
    return data, credentials.encrypt(json.dumps(secret)) if secret else ""


def state_of(call: ToolCall) -> TaskState | None:
    """The task kept on ``call``'s row, secrets decrypted; None when it has none (or it is unreadable)."""
    if not call.task_state:
        return None
    data = dict(call.task_state)
    try:
        if call.task_secret_ciphertext:
            data.update(json.loads(credentials.decrypt(call.task_secret_ciphertext)))
        return TaskState.from_dict(data)
    except (ValueError, credentials.CredentialUnavailable) as exc:
        logger.warning("the task state of tool call %s is unreadable: %s", call.pk, type(exc).__name__)
        return None


class TaskRecorder:
    """Write each state the client hears on the row; a failed write is logged, polling goes on."""

    def __init__(self, call_id: uuid.UUID) -> None:
        self.call_id = call_id
        self.last: TaskState | None = None

    def __call__(self, state: TaskState) -> None:
        self.last = state
        data, secret = stored(state)
        try:
            ledger.write(
                lambda: ToolCall.objects.filter(pk=self.call_id, status=ToolCallStatus.RUNNING).update(
                    task_state=data, task_secret_ciphertext=secret
                ),
                each_statement=True,
            )
        except ledger.LedgerUnavailable as exc:
            logger.warning("the task state of tool call %s was not recorded: %s", self.call_id, exc.for_log())


def now() -> datetime:
    """The database's clock: every lease is judged on it, whichever host a worker runs on."""
    return decisions.approval_moment(None)


def take_lease(
    call_id: uuid.UUID, seconds: float, *, following: bool, guarding: datetime | None = None
) -> datetime | None:
    """Hold the lease; its end, or None when another worker holds it. ``guarding`` is the lease a
    scheduled delivery was meant to take over, taken even if the database's clock lags."""
    moment = now()
    until = moment + timedelta(seconds=seconds + LEASE_MARGIN_SECONDS)
    rows = ToolCall.objects.filter(pk=call_id, status=ToolCallStatus.RUNNING, on_worker=True)
    if following:
        free = Q(task_lease_until__isnull=True) | Q(task_lease_until__lt=moment)
        if guarding is not None:
            free |= Q(task_lease_until=guarding)
        rows = rows.filter(task_state__isnull=False).filter(free)
    taken = ledger.write(lambda: rows.update(task_lease_until=until), each_statement=True)
    return until if taken else None


def release(call_id: uuid.UUID) -> None:
    """Let the next delivery follow the task at once (this worker's slice ended with it pending)."""
    ledger.write(
        lambda: ToolCall.objects.filter(pk=call_id).update(task_lease_until=None), each_statement=True
    )
