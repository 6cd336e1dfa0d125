"""Retention: delete finished ledger rows older than ``NR_LLM_LEDGER_RETENTION_DAYS``.

Rows go in batches of ``BATCH_ROWS``, each batch a short transaction of its own on the
ledger's connection, oldest first: no lock is held for longer than one batch, calls being
written meanwhile are untouched (they are newer than the cutoff), and a failure loses at most
the batch in hand. Only finished states are deleted, and each DELETE says so again in its
WHERE: a call awaiting approval, approved and not yet resumed, or running is never removed,
however old. Two prunes at once share the work: on PostgreSQL a batch is locked with
``SKIP LOCKED`` and the other prune takes the next one; on SQLite the single writer orders
them and the later DELETE finds nothing. Counts are of rows actually deleted, so two
concurrent reports add up to what went.

The cutoff is counted back from the older of the worker's clock and the database server's,
so a worker's clock that jumps forward cannot age every row at once.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from ..conf import conf
from . import dbclock, ledger, reaper
from .models import ToolCall, ToolCallStatus

#: States a call never leaves: the only ones retention deletes.
FINISHED = (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED, ToolCallStatus.DENIED, ToolCallStatus.EXPIRED)
#: Rows per batch: one short transaction each, under every database's parameter limit.
BATCH_ROWS = 500


@dataclass(frozen=True)
class PruneReport:
    """What one prune did: the cutoff it used, and the rows it deleted by state."""

    days: int
    cutoff: datetime | None
    removed: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    reaped: int = 0

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def lines(self) -> list[str]:
        """The report as an operator reads it (the command prints it, the task logs it)."""
        out: list[str] = []
        if self.reaped:
            out.append(f"{self.reaped} call(s) left running past their budget marked failed (may have run).")
        if self.cutoff is None:
            out.append("Retention is off (0 days): no tool call was removed.")
            return out
        by_state = ", ".join(
            f"{count} {ToolCallStatus(state).label.lower()}" for state, count in sorted(self.removed.items())
        )
        out.append(
            f"{self.total} finished tool call(s) older than {self.days} day(s) (before "
            f"{self.cutoff:%Y-%m-%d %H:%M:%S} UTC) removed in {self.batches} batch(es)"
            + (f": {by_state}." if by_state else ".")
        )
        return out


def prune(
    days: int | None = None,
    *,
    clock: Callable[[], datetime] = timezone.now,
    batch_rows: int = BATCH_ROWS,
    reap: bool = True,
) -> PruneReport:
    """Delete finished rows older than ``days`` (default: the setting; 0 deletes nothing).

    ``reap`` first marks calls left running past their budget (``reaper.reap``), so a call
    whose worker died is finished, and in time pruned, instead of staying "running" for good.
    """
    keep = conf.LEDGER_RETENTION_DAYS if days is None else days
    if keep < 0:
        raise ValueError(f"days must be 0 or more, not {keep}")
    reaped = reaper.reap() if reap else 0
    if keep == 0:
        return PruneReport(days=0, cutoff=None, reaped=reaped)
    cutoff = _cutoff(clock(), keep)
    removed: dict[str, int] = {}
    batches = 0
    after: tuple[datetime, uuid.UUID] | None = None
    while True:
        last, deleted = ledger.write(functools.partial(_delete_batch, cutoff, batch_rows, after))
        if last is None:
            break
        batches += 1
        after = last
        for state, count in deleted.items():
            removed[state] = removed.get(state, 0) + count
    return PruneReport(days=keep, cutoff=cutoff, removed=removed, batches=batches, reaped=reaped)


def _cutoff(now: datetime, days: int) -> datetime:
    return dbclock.not_ahead(now) - timedelta(days=days)


def _delete_batch(
    cutoff: datetime, size: int, after: tuple[datetime, uuid.UUID] | None
) -> tuple[tuple[datetime, uuid.UUID] | None, dict[str, int]]:
    """One batch, in the caller's (the ledger's own) transaction: (where it ended, deleted by state)."""
    candidates = ToolCall.objects.select_for_update(skip_locked=True).filter(
        status__in=FINISHED, created__lt=cutoff
    )
    if after is not None:
        # Onward from the last batch, not from the index's start: the entries of rows just
        # deleted stay in the index until a vacuum, and each batch would wade through them.
        candidates = candidates.filter(Q(created__gt=after[0]) | Q(created=after[0], id__gt=after[1]))
    rows = list(
        # A call decided or run after the cutoff (an old call approved late) keeps its row a
        # full term from when it ended.
        candidates.exclude(finished_at__gte=cutoff)
        .order_by("created", "id")
        .values_list("pk", "status", "created")[:size]
    )
    if not rows:
        return None, {}
    by_state: dict[str, list[uuid.UUID]] = {}
    for pk, state, _ in rows:
        by_state.setdefault(state, []).append(pk)
    deleted: dict[str, int] = {}
    for state, pks in by_state.items():
        # The state again in the DELETE: whatever happened since the SELECT, only a finished
        # row goes (PostgreSQL re-checks the condition on the row version it deletes).
        count, _ = ToolCall.objects.filter(pk__in=pks, status=state).delete()
        if count:
            deleted[state] = count
    return (rows[-1][2], rows[-1][0]), deleted
