"""Retention: ``mcp_prune_ledger`` and the ``prune_ledger`` task delete finished rows older than
N days in batches, never a pending or running call; SQLite and PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import io
import threading
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from nr_llm import tasks
from nr_llm.conf import conf
from nr_llm.governance import decisions, ledger
from nr_llm.governance.dbclock import database_now
from nr_llm.governance.retention import prune
from nr_llm.models import ToolCall, ToolCallStatus

from .helpers import FakeClock, approver

pytestmark = pytest.mark.django_db(transaction=True)

NOW = FakeClock().now
FINISHED = [ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED, ToolCallStatus.DENIED, ToolCallStatus.EXPIRED]


def _row(status: str, age_days: float, **fields: Any) -> ToolCall:
    """A ledger row ``age_days`` before NOW; a finished one finished when it was made."""
    created = NOW - timedelta(days=age_days)
    finished = created if status in FINISHED else None
    values: dict[str, Any] = {"finished_at": finished, "tool_name": "mcp_guarded_echo", **fields}
    return ToolCall.objects.create(id=uuid.uuid4(), created=created, status=status, **values)


def _left() -> set[uuid.UUID]:
    return set(ToolCall.objects.values_list("pk", flat=True))


def test_finished_rows_older_than_the_days_go_and_everything_else_stays():
    """Every finished state older than N days is deleted; newer rows, and pending or running
    calls of any age, stay; the report counts what went, by state."""
    old = [_row(state, 40) for state in FINISHED]
    kept = [
        _row(ToolCallStatus.SUCCEEDED, 20),
        _row(ToolCallStatus.AWAITING_APPROVAL, 400, expires_at=NOW + timedelta(hours=1)),
        _row(ToolCallStatus.APPROVED, 400, expires_at=NOW + timedelta(hours=1)),
        _row(ToolCallStatus.RUNNING, 400, started_at=NOW - timedelta(minutes=1)),
    ]
    report = prune(30, clock=FakeClock(NOW), reap=False)
    assert _left() == {row.pk for row in kept}
    assert report.total == len(old) and report.removed == {state.value: 1 for state in FINISHED}
    assert report.cutoff == NOW - timedelta(days=30)


def test_a_prune_goes_in_batches_and_a_second_one_finds_nothing():
    """Seven old rows in batches of two: four batches, all seven gone; run again, nothing."""
    for _ in range(7):
        _row(ToolCallStatus.SUCCEEDED, 100)
    report = prune(30, clock=FakeClock(NOW), batch_rows=2, reap=False)
    assert (report.total, report.batches) == (7, 4)
    assert prune(30, clock=FakeClock(NOW), batch_rows=2, reap=False).total == 0


def test_zero_days_keeps_every_row():
    """--days 0 (and a setting of 0) keep everything, and say so."""
    _row(ToolCallStatus.SUCCEEDED, 1000)
    report = prune(0, clock=FakeClock(NOW))
    assert report.total == 0 and ToolCall.objects.count() == 1
    assert "Retention is off" in " ".join(report.lines())
    with override_settings(NR_LLM_LEDGER_RETENTION_DAYS=0):
        assert prune(clock=FakeClock(NOW)).total == 0


@pytest.mark.parametrize(
    ("value", "days"), [(None, 90), (30, 30), ("7", 7), (0, 0), ("ninety", 0), (-1, 0), (True, 0), (1.5, 0)]
)
def test_the_setting_defaults_to_ninety_days_and_an_unusable_value_keeps_everything(value, days):
    """Unset: 90 days. A value that is not a whole number of days prunes nothing (E024 says why)."""
    with override_settings(NR_LLM_LEDGER_RETENTION_DAYS=value):
        assert days == conf.LEDGER_RETENTION_DAYS


def test_the_default_applies_when_no_days_are_given():
    """With the setting unset, a row of 91 days goes and one of 89 stays."""
    _row(ToolCallStatus.SUCCEEDED, 91)
    young = _row(ToolCallStatus.SUCCEEDED, 89)
    assert prune(clock=FakeClock(NOW), reap=False).total == 1
    assert _left() == {young.pk}


def test_a_clock_jumped_forward_does_not_age_every_row():
    """The cutoff counts back from the database's clock when the worker's is ahead of it: a
    worker clock a year fast deletes what is old by the database's time, not everything."""
    now = database_now()
    young = ToolCall.objects.create(created=now - timedelta(days=1), status="succeeded", finished_at=now)
    ToolCall.objects.create(created=now - timedelta(days=45), status="succeeded", finished_at=None)
    report = prune(30, clock=FakeClock(now + timedelta(days=365)), reap=False)
    assert report.total == 1 and _left() == {young.pk}


def test_an_old_call_approved_late_and_run_is_kept_a_full_term():
    """A call made long ago, approved and resumed now, is kept while pending, while running,
    and once finished (its end is recent), whatever its creation date."""
    call = _row(
        ToolCallStatus.AWAITING_APPROVAL,
        200,
        arguments_digest="d" * 64,
        expires_at=NOW + timedelta(hours=1),
    )
    clock = FakeClock(NOW)
    decisions.approve(call.pk, approver(), clock=clock)
    assert prune(30, clock=clock, reap=False).total == 0
    claim = decisions.claim(call.pk, clock)
    assert claim is not None and claim.claimed
    assert prune(30, clock=clock, reap=False).total == 0
    ledger.finish(call.pk, is_error=False, error_kind="", duration_ms=5, era="", result_text="ok", now=NOW)
    assert prune(30, clock=clock, reap=False).total == 0
    assert ToolCall.objects.get(pk=call.pk).status == ToolCallStatus.SUCCEEDED


def test_the_command_prints_what_it_removed_and_refuses_a_bad_number_of_days():
    """mcp_prune_ledger --days N prints the count by state; --days -1 or "x" is a usage error."""
    _row(ToolCallStatus.FAILED, 10_000)
    _row(ToolCallStatus.SUCCEEDED, 10_000)
    out = io.StringIO()
    call_command("mcp_prune_ledger", "--days", "30", stdout=out)
    assert "2 finished tool call(s) older than 30 day(s)" in out.getvalue()
    assert "1 failed, 1 succeeded" in out.getvalue()
    for bad in ("-1", "x", "1.5"):
        with pytest.raises(CommandError, match="whole number of days"):
            call_command("mcp_prune_ledger", "--days", bad)


def test_the_task_prunes_on_the_worker_queue():
    """prune_ledger enqueued on the (immediate) task backend prunes and returns its report."""
    _row(ToolCallStatus.SUCCEEDED, 10_000)
    result = tasks.prune_ledger.enqueue(30)
    assert result.return_value["removed"] == {"succeeded": 1}
    assert ToolCall.objects.count() == 0


@pytest.mark.skipif("connection.vendor == 'sqlite'", reason="row locks (SKIP LOCKED): PostgreSQL, MariaDB")
def test_two_prunes_at_once_share_the_work_and_count_it_once():
    """Two prunes started together delete every old row once between them: the reports add up
    to what went, and the new rows and the pending call stay."""
    for _ in range(60):
        _row(ToolCallStatus.SUCCEEDED, 100)
    young = _row(ToolCallStatus.SUCCEEDED, 1)
    waiting = _row(ToolCallStatus.AWAITING_APPROVAL, 100, expires_at=NOW + timedelta(hours=1))
    totals: list[int] = []
    start = threading.Barrier(2)

    def run() -> None:
        start.wait()
        try:
            totals.append(prune(30, clock=FakeClock(NOW), batch_rows=5, reap=False).total)
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(totals) == 60 and len(totals) == 2
    assert _left() == {young.pk, waiting.pk}


def test_rows_written_during_a_prune_are_not_touched():
    """A call written between two batches (newer than the cutoff) survives the prune."""
    for _ in range(4):
        _row(ToolCallStatus.SUCCEEDED, 100)
    written: list[ToolCall] = []
    real = ledger.write

    def write_between(work: Any) -> Any:
        value = real(work)
        if not written:
            written.append(_row(ToolCallStatus.RUNNING, 0, started_at=NOW))
        return value

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ledger, "write", write_between)
        report = prune(30, clock=FakeClock(NOW), batch_rows=1, reap=False)
    assert report.total == 4 and _left() == {written[0].pk}
