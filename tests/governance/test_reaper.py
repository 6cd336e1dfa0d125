"""The reaper: a call left running past the longest budget plus a margin (a worker killed
mid-call) is marked failed, "may have run"; SQLite and PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings

from nr_llm import tools
from nr_llm.governance import ledger, preview
from nr_llm.governance.dbclock import database_now
from nr_llm.governance.reaper import ABANDONED, MARGIN_SECONDS, reap
from nr_llm.models import ToolCall, ToolCallStatus
from tests.factories import McpServerFactory

from .helpers import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

NOW = FakeClock().now


def _running(seconds_ago: float, **fields: object) -> ToolCall:
    """A running row started ``seconds_ago`` by the database's clock (as the ledger writes it)."""
    started = database_now() - timedelta(seconds=seconds_ago)
    return ToolCall.objects.create(
        id=uuid.uuid4(), created=started, started_at=started, status=ToolCallStatus.RUNNING, **fields
    )


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_call_running_past_its_budget_and_the_margin_is_marked_may_have_run():
    """Past 20 s + the margin: failed, kind "may_have_run:abandoned", its kept answer says it may have run,
    finished at the database's time. Within it: still running, untouched."""
    dead = _running(20 + MARGIN_SECONDS + 5)
    alive = _running(20 + MARGIN_SECONDS - 30)
    before = database_now()
    assert reap() == 1
    dead.refresh_from_db()
    assert (dead.status, dead.error_kind) == (ToolCallStatus.FAILED, ABANDONED)
    assert dead.finished_at is not None and before - timedelta(seconds=1) <= dead.finished_at
    assert dead.finished_at <= database_now() + timedelta(seconds=1)
    assert ABANDONED == "may_have_run:abandoned" and ledger.may_have_run(dead)
    assert "may have run" in preview.preview_of(dead)
    alive.refresh_from_db()
    assert alive.status == ToolCallStatus.RUNNING and alive.finished_at is None


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_server_with_a_longer_budget_lengthens_the_wait():
    """A server whose own budget is 600 s may still be running a call at 20 s + the margin."""
    McpServerFactory.create(identifier="slow", operation_timeout=600)
    within = _running(20 + MARGIN_SECONDS + 60)
    beyond = _running(600 + MARGIN_SECONDS + 5)
    assert reap() == 1
    within.refresh_from_db()
    beyond.refresh_from_db()
    assert (within.status, beyond.status) == (ToolCallStatus.RUNNING, ToolCallStatus.FAILED)


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_late_outcome_cannot_undo_a_reap_and_no_other_state_is_touched():
    """The worker's own finish after the reap changes nothing (WHERE status = running);
    pending and finished rows, however old, are never reaped."""
    dead = _running(10_000)
    others = [
        ToolCall.objects.create(created=NOW - timedelta(days=9), status=state)
        for state in (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.APPROVED, ToolCallStatus.SUCCEEDED)
    ]
    assert reap() == 1
    ledger.finish(dead.pk, is_error=False, error_kind="", duration_ms=1, era="", result_text="late", now=NOW)
    dead.refresh_from_db()
    assert dead.status == ToolCallStatus.FAILED and dead.error_kind == ABANDONED
    assert [ToolCall.objects.get(pk=row.pk).status for row in others] == [row.status for row in others]


@pytest.mark.parametrize("skew", [timedelta(days=-1), timedelta(days=365)])
@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_worker_clock_far_off_the_databases_never_reaps_a_live_call(skew):
    """A call runs on a worker whose clock (the execute() clock seam) lags the database's by a day,
    or runs a year ahead; the reaper, run while the call is live, leaves it running: its start
    and the reaper's now are both the database's clock. The call then records its outcome."""
    seen: list[int] = []

    @tools.register("site_reaps", "Runs the reaper while the call is live.", {"type": "object"})
    def reaps_meanwhile() -> str:
        seen.append(reap())
        seen.append(ToolCall.objects.filter(status=ToolCallStatus.RUNNING).count())
        return "done"

    try:
        worker = FakeClock(database_now() + skew)
        result = tools.execute("site_reaps", {}, clock=worker)
    finally:
        tools.unregister("site_reaps")
    assert (result.is_error, result.text) == (False, "done")
    assert seen == [0, 1]  # nothing reaped; the live call was running then
    assert result.call_id is not None
    row = ToolCall.objects.get(pk=result.call_id)
    assert row.status == ToolCallStatus.SUCCEEDED and row.created == worker.now
    assert row.started_at is not None and abs(row.started_at - database_now()) < timedelta(minutes=1)


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_the_prune_command_reaps_first_and_says_so():
    """mcp_prune_ledger runs the reaper before pruning and reports what it marked."""
    ToolCall.objects.create(
        created=NOW - timedelta(days=1), started_at=None, status=ToolCallStatus.RUNNING, tool_name="t"
    )
    out = io.StringIO()
    call_command("mcp_prune_ledger", stdout=out)
    assert "1 call(s) left running past their budget marked failed (may have run)." in out.getvalue()
