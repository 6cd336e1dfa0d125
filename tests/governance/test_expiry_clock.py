"""Approval expiry follows the database's clock, both sides, when the host's clock is 10 minutes
off (``timezone.now`` skewed, the database's own clock untouched); SQLite and PostgreSQL
(DATABASE_URL). Expiry is 5 minutes, so a host 10 minutes ahead would expire every call at
once, and one 10 minutes behind would run a call 5 minutes past its time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from nr_llm import tools
from nr_llm.governance import decisions
from nr_llm.governance.admin import waiting_count
from nr_llm.governance.dbclock import database_now
from nr_llm.models import McpTool, ToolCall, ToolCallStatus
from tests.fakes import FakeClient

from .helpers import approver, guarded_tool, row_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("five_minutes"),
]

EXPIRY = timedelta(minutes=5)
SKEW = timedelta(minutes=10)
CLOSE = timedelta(seconds=30)  # a slow host between a write and the test's read of the clock


@pytest.fixture
def five_minutes() -> Iterator[None]:
    with override_settings(NR_LLM_APPROVAL_EXPIRY_SECONDS=EXPIRY.total_seconds()):
        yield


@pytest.fixture
def host_clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[timedelta], None]:
    """Set this process's clock ``by`` off the database's (both on this host, the test's doing)."""

    def skew(by: timedelta) -> None:
        real = timezone.now
        monkeypatch.setattr(timezone, "now", lambda: real() + by)
        assert abs(timezone.now() - database_now() - by) < CLOSE

    return skew


def _held() -> ToolCall:
    name = "mcp_guarded_echo"
    if not McpTool.objects.filter(tool_name=name).exists():
        name = guarded_tool().tool_name
    result = tools.execute(name, {"text": "hi"}, client=FakeClient())
    assert result.status == "awaiting_approval", result
    return row_of(result)


def _about(moment: datetime | None, expected: datetime) -> bool:
    return moment is not None and abs(moment - expected) < CLOSE


def _overdue(call: ToolCall) -> None:
    """Its time ran out a second ago by the database's clock (as if 5 minutes had passed)."""
    ToolCall.objects.filter(pk=call.pk).update(expires_at=database_now() - timedelta(seconds=1))


def test_a_host_clock_ahead_expires_nothing_early(host_clock: Callable[[timedelta], None]) -> None:
    """Held, approved and resumed on a host 10 minutes ahead: each expiry is 5 minutes from the
    database's now, nothing expires, the call is counted as waiting, and it runs once."""
    host_clock(SKEW)
    call = _held()
    assert _about(call.expires_at, database_now() + EXPIRY)
    assert decisions.expire_due() == 0 and waiting_count() == 1
    decision = tools.approve(call.id, approver())
    call.refresh_from_db()
    assert call.status == ToolCallStatus.APPROVED
    assert _about(decision.decided_at, database_now()) and _about(call.expires_at, database_now() + EXPIRY)
    assert decisions.expire_due() == 0
    client = FakeClient()
    result = tools.resume(call.id, client=client)
    assert (result.status, len(client.calls)) == ("succeeded", 1)


def test_a_host_clock_behind_runs_nothing_late(host_clock: Callable[[timedelta], None]) -> None:
    """On a host 10 minutes behind, a call past its time by the database's clock is expired:
    approving it is refused, resuming it runs nothing, and the admin's sweep expires it."""
    host_clock(-SKEW)
    waiting = _held()
    assert _about(waiting.expires_at, database_now() + EXPIRY)
    _overdue(waiting)
    assert waiting_count() == 0
    with pytest.raises(tools.DecisionRefused, match="expired"):
        tools.approve(waiting.id, approver("ann"))
    approved = _held()
    tools.approve(approved.id, approver("bea"))
    _overdue(approved)
    client = FakeClient()
    result = tools.resume(approved.id, client=client)
    assert (result.status, result.is_error, client.calls) == ("expired", True, [])
    swept = _held()
    _overdue(swept)
    assert decisions.expire_due() == 1
    assert ToolCall.objects.get(pk=swept.pk).status == ToolCallStatus.EXPIRED
