"""The reaper: a call left running past the longest budget plus a margin (a worker killed
mid-call) is marked failed, "may have run"; SQLite and PostgreSQL (DATABASE_URL)."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings

from nr_llm.governance import ledger
from nr_llm.governance.dbclock import database_now
from nr_llm.governance.reaper import ABANDONED, MARGIN_SECONDS, reap
from nr_llm.models import ToolCall, ToolCallStatus
from tests.factories import McpServerFactory

from .helpers import FakeClock

pytestmark = pytest.mark.django_db(transaction=True)

NOW = FakeClock().now


def _running(seconds_ago: float, **fields: object) -> ToolCall:
    started = NOW - timedelta(seconds=seconds_ago)
    return ToolCall.objects.create(
        id=uuid.uuid4(), created=started, started_at=started, status=ToolCallStatus.RUNNING, **fields
    )


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_call_running_past_its_budget_and_the_margin_is_marked_may_have_run():
    """Past 20 s + the margin: failed, kind "may_have_run:abandoned", its kept answer says it may have run.
    Within it: still running, untouched."""
    dead = _running(20 + MARGIN_SECONDS + 1)
    alive = _running(20 + MARGIN_SECONDS - 1)
    assert reap(clock=FakeClock(NOW)) == 1
    dead.refresh_from_db()
    assert (dead.status, dead.error_kind, dead.finished_at) == (ToolCallStatus.FAILED, ABANDONED, NOW)
    assert ABANDONED == "may_have_run:abandoned" and ledger.may_have_run(dead)
    assert "may have run" in ledger.preview_of(dead)
    alive.refresh_from_db()
    assert alive.status == ToolCallStatus.RUNNING and alive.finished_at is None


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_server_with_a_longer_budget_lengthens_the_wait():
    """A server whose own budget is 600 s may still be running a call at 20 s + the margin."""
    McpServerFactory.create(identifier="slow", operation_timeout=600)
    call = _running(20 + MARGIN_SECONDS + 60)
    assert reap(clock=FakeClock(NOW)) == 0
    assert reap(clock=FakeClock(NOW + timedelta(seconds=600))) == 1
    call.refresh_from_db()
    assert call.status == ToolCallStatus.FAILED


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_late_outcome_cannot_undo_a_reap_and_no_other_state_is_touched():
    """The worker's own finish after the reap changes nothing (WHERE status = running);
    pending and finished rows, however old, are never reaped."""
    dead = _running(10_000)
    others = [
        ToolCall.objects.create(created=NOW - timedelta(days=9), status=state)
        for state in (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.APPROVED, ToolCallStatus.SUCCEEDED)
    ]
    assert reap(clock=FakeClock(NOW)) == 1
    ledger.finish(dead.pk, is_error=False, error_kind="", duration_ms=1, era="", result_text="late", now=NOW)
    dead.refresh_from_db()
    assert dead.status == ToolCallStatus.FAILED and dead.error_kind == ABANDONED
    assert [ToolCall.objects.get(pk=row.pk).status for row in others] == [row.status for row in others]


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_a_worker_clock_jumped_forward_does_not_reap_a_live_call():
    """A call started a minute ago by the database's clock stays running when the worker's
    clock reads a year later; its age counts from the database's clock."""
    started = database_now() - timedelta(minutes=1)
    call = ToolCall.objects.create(created=started, started_at=started, status=ToolCallStatus.RUNNING)
    assert reap(clock=FakeClock(started + timedelta(days=365))) == 0
    call.refresh_from_db()
    assert call.status == ToolCallStatus.RUNNING


@override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=20)
def test_the_prune_command_reaps_first_and_says_so():
    """mcp_prune_ledger runs the reaper before pruning and reports what it marked."""
    ToolCall.objects.create(
        created=NOW - timedelta(days=1), started_at=None, status=ToolCallStatus.RUNNING, tool_name="t"
    )
    out = io.StringIO()
    call_command("mcp_prune_ledger", stdout=out)
    assert "1 call(s) left running past their budget marked failed (may have run)." in out.getvalue()
