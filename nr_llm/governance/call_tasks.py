"""The MCP task of a call run by a worker, kept on its ledger row so polling resumes anywhere.

::

    running (task created) --slice ends, task pending--> running (lease released)
        |                                                    |
        +--worker killed: lease passes--+   next delivery claims the lease, polls
                                        v
                           next delivery claims the lease, polls

A server that answers ``tools/call`` with a task has accepted the call: from then on only the
task is followed (``tasks/get``, its result read once) and the call is never sent again. The
task's state goes on the row (``task_state``; its session id and request state encrypted in
``task_secret_ciphertext``). One worker at a time follows a task: it holds the row's lease
(``task_lease_until``, on the database's clock), taken with a compare-and-set; a worker killed
while it polls leaves a lease that passes, and the delivery scheduled for that moment takes over.
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

#: The parts of a task's state that are handles on the server's side: encrypted at rest, never
#: shown (a session id lets its holder speak in that session; a request state is the server's).
SECRET_PARTS = ("session_id", "request_state")
#: Seconds a lease outlasts the slice it covers: a poll's worst case is its budget plus under one
#: second (seed 000), and the database write after it.
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
    """``TaskOptions.on_state`` of a worker's call: each state the client hears goes on the row.

    A write that fails is logged: the client goes on polling, and the row keeps the state before.
    """

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
    """Hold ``call_id``'s lease for ``seconds`` (plus the margin); its end, or None when another
    worker holds it or the row is not a running call. ``following``: the call's task was created
    already (a resumed delivery); otherwise the row is one this worker just claimed.
    ``guarding``: the lease a scheduled delivery was enqueued to take over when it ends; that
    lease is taken even if the database's clock lags the scheduler's (SQLite's has whole seconds),
    while a newer holder's lease never is."""
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
