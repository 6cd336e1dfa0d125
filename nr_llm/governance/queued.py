"""Calls run by a worker of the site's task backend (``tools.enqueue``): the claim, the progress.

::

    queued --claim--> running --> succeeded | failed
       |
       +--past NR_LLM_QUEUED_OPERATION_TIMEOUT--> failed (not run: no worker took it in time)

A worker claims a row with one conditional ``UPDATE … SET status = running WHERE status =
queued``: a backend that delivers the task twice, or retries it, finds nothing to claim the
second time, so the call is never sent twice. A held call (``awaiting_approval``) is enqueued by
its approval and claimed from ``approved`` through ``decisions.claim``, as ``resume`` would. A
worker killed mid-call leaves its row ``running``; the reaper ends it "may have run" once the
queued budget and its margin have passed (``reaper.reap_worker_rows``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db.models.functions import Now
from django.utils import timezone

from ..conf import conf
from ..mcp import Progress
from . import decisions, ledger, preview
from .ledger import WallClock
from .models import ToolCall, ToolCallStatus

logger = logging.getLogger("nr_llm.governance")

#: The error kind of a queued call no worker claimed within its budget: it was never sent.
NO_WORKER = "not_run:no_worker"
NO_WORKER_TEXT = (
    "No worker took this call within its budget (NR_LLM_QUEUED_OPERATION_TIMEOUT); it was not run "
    "and will not be. Call the tool again if it is still needed."
)
#: Seconds between two progress writes of one call: a chatty server costs a write a second at most.
PROGRESS_INTERVAL_SECONDS = 1.0


@dataclass(frozen=True)
class WorkerClaim:
    """The row as read after the claim; ``approved``: claimed from ``approved``, None: not claimed
    (another delivery ran it, it is held, finished, or gone)."""

    call: ToolCall
    approved: bool | None


def claim(call_id: uuid.UUID, clock: WallClock | None = None) -> WorkerClaim | None:
    """Move a queued (or approved) worker row to running, for this delivery only; None: no row."""
    # The database's clock, as the row's ``created`` is (an injected test clock stands for both).
    now = decisions.approval_moment(clock)
    cutoff = now - timedelta(seconds=conf.QUEUED_OPERATION_TIMEOUT)

    def move() -> tuple[int, ToolCall | None]:
        queued = ToolCall.objects.filter(pk=call_id, status=ToolCallStatus.QUEUED, on_worker=True)
        # Waited past its budget (a worker fleet down for long): ended unsent, not run late.
        queued.filter(created__lt=cutoff).update(**not_run(now))
        claimed = queued.update(status=ToolCallStatus.RUNNING, started_at=Now())  # the reaper's clock
        return claimed, ToolCall.objects.filter(pk=call_id).first()

    claimed, call = ledger.write(move, each_statement=True)
    if call is None:
        return None
    if claimed:
        return WorkerClaim(call, False)
    if call.status == ToolCallStatus.APPROVED and call.on_worker:
        approved = decisions.claim(call_id, clock or timezone.now)
        if approved is None:
            return None
        return WorkerClaim(approved.call, True if approved.claimed else None)
    return WorkerClaim(call, None)


def not_run(now: object) -> dict[str, object]:
    return {
        "status": ToolCallStatus.FAILED,
        "error_kind": NO_WORKER,
        "finished_at": now,
        "result_preview_ciphertext": preview.preview(NO_WORKER_TEXT),
    }


class ProgressRecorder:
    """Keeps a running call's latest ``notifications/progress`` on its row, at most one write per
    ``interval`` seconds; ``flush`` writes what the throttle held back. A write that fails is
    logged and skipped: progress is advice, never a reason to fail the call."""

    def __init__(
        self,
        call_id: uuid.UUID,
        *,
        interval: float = PROGRESS_INTERVAL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.call_id = call_id
        self.interval = interval
        self._monotonic = monotonic
        self._written_at: float | None = None
        self._pending: Progress | None = None
        self.writes = 0

    def __call__(self, progress: Progress) -> None:
        self._pending = progress
        now = self._monotonic()
        if self._written_at is None or now - self._written_at >= self.interval:
            self._written_at = now
            self.flush()

    def flush(self) -> None:
        progress, self._pending = self._pending, None
        if progress is None:
            return
        try:
            ledger.write(
                lambda: ToolCall.objects.filter(pk=self.call_id).update(
                    progress=progress.progress,
                    progress_total=progress.total,
                    progress_message=progress.message,
                ),
                each_statement=True,
            )
            self.writes += 1
        except ledger.LedgerUnavailable as exc:
            logger.warning("the progress of tool call %s was not recorded: %s", self.call_id, exc.for_log())


def end_unsent(call_id: uuid.UUID, why: str) -> None:
    """End a queued row no worker will run (its task could not be enqueued); logged if it cannot."""
    try:
        ledger.write(
            lambda: ToolCall.objects.filter(pk=call_id, status=ToolCallStatus.QUEUED).update(
                status=ToolCallStatus.FAILED,
                error_kind="not_run:not_enqueued",
                finished_at=Now(),
                result_preview_ciphertext=preview.preview(f"{why}; the call was not run."),
            ),
            each_statement=True,
        )
    except ledger.LedgerUnavailable as exc:
        logger.error("queued tool call %s was not ended (%s); the reaper ends it", call_id, exc.for_log())
