"""The reaper: a call left ``running`` past its budget plus a margin is marked failed, "may have run".

An operation ends within its budget plus under a second whatever the server does (the
deadline's contract), and ``execute()`` records every outcome it sees; a row still running
long after that belongs to a worker that was killed mid-call. The server may have run the
tool, so the row says so: status failed, ``error_kind = "may_have_run:abandoned"``
(``ledger.may_have_run``), and a kept answer telling the reader not to assume either way.

The budget used is the largest any server may have (the installation's, or a server's own
override, whichever is larger), so a call to a slow server is never reaped while it can
still be running. A local tool has no deadline: one that runs longer than that budget
plus ``MARGIN_SECONDS`` is reaped too (its late outcome is then not recorded), the price of
never leaving a dead worker's row running for good.

Both sides of the comparison are the database server's clock: a running row's ``started_at``
is written as the database's ``Now()`` (``ledger``, ``decisions.claim``) and the cutoff counts
back from ``dbclock.database_now()``, so no worker's clock, ahead or behind, reaps a live call.
It runs at the start of every prune (``mcp_prune_ledger`` and the ``prune_ledger`` task).
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
    # A worker's row has the queued budget (NR_LLM_QUEUED_OPERATION_TIMEOUT), reaped on its own.
    never, abandoned = reap_worker_rows(MARGIN_SECONDS)
    # One UPDATE, conditional on the state: a worker that records its outcome first wins, and
    # its own later write (``ledger.finish``, WHERE status = running) cannot undo a reap.
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
    """End the worker rows past the queued budget plus ``margin_seconds``: (never claimed, running).

    A queued row no worker took is ended unsent (the conditional UPDATE proves no worker can claim
    it afterwards); a running one "may have run" (``reaper.ABANDONED``). Judged on the database's
    clock, as the reaper judges every running row.
    """
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
