"""Mark a call left running long past the longest budget failed, "may have run": its worker died
mid-call, and the server may have run the tool.

Both ends of the comparison are the database's clock, so no worker's clock reaps a live call.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Max, Q

from ..conf import conf
from . import dbclock, ledger, preview, queued
from .models import ToolCall, ToolCallStatus

#: Beyond the budget: a loaded worker, a slow ledger write, clocks a little apart.
MARGIN_SECONDS = 300
ABANDONED = ledger.may_have_run_kind("abandoned")
ABANDONED_TEXT = (
    "The worker running this call stopped before recording its outcome. The server may have run "
    "the tool: check its effect before calling it again."
)


def longest_budget() -> float:
    """Seconds the slowest server's operation may take (the admin's override, or the setting)."""
    from ..models import McpServer  # the server models import the governance package

    override = McpServer.objects.aggregate(longest=Max("operation_timeout"))["longest"] or 0
    return max(conf.MCP_OPERATION_TIMEOUT, float(override))


def reap() -> int:
    """Mark overdue running calls failed, may have run; return how many."""
    now = dbclock.database_now()
    cutoff = now - timedelta(seconds=longest_budget() + MARGIN_SECONDS)
    overdue = Q(started_at__lt=cutoff) | Q(started_at__isnull=True, created__lt=cutoff)
    answer = preview.preview(ABANDONED_TEXT)
    never, abandoned = reap_worker_rows(MARGIN_SECONDS)
    # Conditional on the state: a worker that records its outcome first wins, and cannot undo a reap.
    return (
        never
        + abandoned
        + ledger.write(
            lambda: ToolCall.objects.filter(overdue, status=ToolCallStatus.RUNNING, on_worker=False).update(
                status=ToolCallStatus.FAILED,
                error_kind=ABANDONED,
                finished_at=now,
                result_preview_ciphertext=answer,
            )
        )
    )


def reap_worker_rows(margin_seconds: float) -> tuple[int, int]:
    """End worker rows past the queued budget: a queued one unsent, a running one "may have run";
    return (never claimed, running)."""
    now = dbclock.database_now()
    cutoff = now - timedelta(seconds=conf.QUEUED_OPERATION_TIMEOUT + margin_seconds)
    never = ledger.write(
        lambda: ToolCall.objects.filter(
            status=ToolCallStatus.QUEUED, on_worker=True, created__lt=cutoff
        ).update(**queued.not_run(now))
    )
    answer = preview.preview(ABANDONED_TEXT)
    abandoned = ledger.write(
        lambda: ToolCall.objects.filter(
            status=ToolCallStatus.RUNNING, on_worker=True, started_at__lt=cutoff
        ).update(
            status=ToolCallStatus.FAILED,
            error_kind=ABANDONED,
            finished_at=now,
            result_preview_ciphertext=answer,
        )
    )
    return never, abandoned
