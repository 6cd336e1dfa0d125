"""The approval state machine: approve, deny, expiry and their refusals (nothing runs here)."""

from __future__ import annotations

import pytest

from nr_llm import tools
from nr_llm.governance import decisions, ledger
from nr_llm.models import ToolCall, ToolCallStatus
from tests.fakes import FakeClient

from .helpers import FakeClock, approver, guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)


def _held(actor: object = "agent", clock: FakeClock | None = None) -> ToolCall:
    tool = guarded_tool()
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=FakeClient(), actor=actor, clock=clock)
    assert result.status == "awaiting_approval", result
    return row_of(result)


def test_approve_records_the_approver_the_note_and_binds_the_digest():
    """awaiting → approved: approver, time, note, the digest approved; the resume window starts now."""
    clock = FakeClock()
    call = _held(clock=clock)
    clock.advance(600)
    decision = tools.approve(
        call.id, approver("bea"), "  looks right  ", digest=call.arguments_digest, clock=clock
    )
    assert (decision.status, decision.approver, decision.self_approved) == ("approved", "bea", False)
    call.refresh_from_db()
    assert (call.status, call.approver_label, call.decision_note) == ("approved", "bea", "looks right")
    assert call.decided_at == clock.now and call.approved_digest == call.arguments_digest
    assert call.expires_at == clock.now + ledger.expiry()


def test_deny_records_the_decision_and_ends_the_call():
    """awaiting → denied, finished; the note is kept for the model's answer."""
    call = _held()
    tools.deny(str(call.id), approver(), "not during the freeze")
    call.refresh_from_db()
    assert (call.status, call.decision_note, call.finished_at is not None) == (
        "denied",
        "not during the freeze",
        True,
    )


def test_an_approval_not_yet_run_can_be_withdrawn():
    """approved → denied before a resume claimed it."""
    call = _held()
    user = approver()
    tools.approve(call.id, user)
    tools.deny(call.id, user, "changed my mind")
    call.refresh_from_db()
    assert call.status == ToolCallStatus.DENIED


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        ("approve", "approve", "is already approved by approver at "),
        ("deny", "approve", "is already denied by approver at "),
        ("deny", "deny", "is already denied"),
    ],
)
def test_deciding_twice_is_refused_and_changes_nothing(first, second, message):
    """A second decision is refused with the first one named; the row keeps the first."""
    call = _held()
    user = approver()
    getattr(tools, first)(call.id, user)
    call.refresh_from_db()
    before = (call.status, call.decided_at)
    with pytest.raises(tools.DecisionRefused, match=message):
        getattr(tools, second)(call.id, user)
    call.refresh_from_db()
    assert (call.status, call.decided_at) == before


def test_a_call_that_ran_cannot_be_denied_or_approved():
    """Once resumed, the decision is history: both verbs are refused."""
    call = _held()
    user = approver()
    tools.approve(call.id, user)
    assert tools.resume(call.id, client=FakeClient()).status == "succeeded"
    for verb in (tools.approve, tools.deny):
        with pytest.raises(tools.DecisionRefused, match=r"is already run \(succeeded at "):
            verb(call.id, user)


def test_an_approver_without_the_permission_is_refused():
    """Without nr_llm.approve_toolcall nothing is recorded, and the message names the permission."""
    call = _held()
    carl = approver("carl", allowed=False)
    for verb in (tools.approve, tools.deny):
        with pytest.raises(tools.DecisionRefused, match=r"carl may not .* \(nr_llm.approve_toolcall\)"):
            verb(call.id, carl)
    call.refresh_from_db()
    assert call.status == ToolCallStatus.AWAITING_APPROVAL and call.approver_label == ""


def test_an_anonymous_or_inactive_user_cannot_decide():
    """Only an active user with the permission decides."""
    from django.contrib.auth.models import AnonymousUser

    call = _held()
    user = approver()
    user.is_active = False
    user.save()
    for who in (AnonymousUser(), user):
        with pytest.raises(tools.DecisionRefused, match="may not approve"):
            tools.approve(call.id, who)


@pytest.mark.parametrize("value", ["not-a-uuid", "", "1234", None, 42])
def test_a_malformed_call_id_is_refused_clearly(value):
    """Anything that is not a UUID is named as such before the database is asked."""
    with pytest.raises(tools.DecisionRefused, match="is not a tool call id"):
        tools.approve(value, approver())


def test_an_unknown_call_id_is_refused_clearly():
    """A well-formed id of no call says there is none."""
    with pytest.raises(
        tools.DecisionRefused, match="There is no tool call 00000000-0000-0000-0000-000000000000"
    ):
        tools.deny("00000000-0000-0000-0000-000000000000", approver())


def test_a_digest_other_than_the_calls_is_not_approved():
    """The approver approves exactly what was shown: another digest is refused."""
    call = _held()
    with pytest.raises(tools.DecisionRefused, match="digest mismatch"):
        tools.approve(call.id, approver(), digest="0" * 64)
    call.refresh_from_db()
    assert call.status == ToolCallStatus.AWAITING_APPROVAL


def test_self_approval_is_allowed_and_shown_as_such():
    """The user who made the call may approve it by default; the row says it was self-approved."""
    user = approver("dana")
    call = _held(actor=user)
    assert tools.approve(call.id, user).self_approved is True
    call.refresh_from_db()
    assert call.self_approved is True


def test_a_label_actor_named_like_the_approver_is_self_approval():
    """A command-line actor label equal to the approver's username counts as the same person."""
    call = _held(actor="erin")
    assert tools.approve(call.id, approver("erin")).self_approved is True


def test_the_second_approver_setting_refuses_self_approval(settings):
    """NR_LLM_APPROVAL_SECOND_APPROVER: another person must approve; denying one's own stays allowed."""
    settings.NR_LLM_APPROVAL_SECOND_APPROVER = True
    maker = approver("frank")
    call = _held(actor=maker)
    with pytest.raises(tools.DecisionRefused, match="another person must approve it"):
        tools.approve(call.id, maker)
    assert tools.approve(call.id, approver("gina")).self_approved is False


def test_a_waiting_call_expires_after_the_setting_and_cannot_be_approved(settings):
    """Past NR_LLM_APPROVAL_EXPIRY_SECONDS an awaiting call is expired; approving it is refused."""
    settings.NR_LLM_APPROVAL_EXPIRY_SECONDS = 60
    clock = FakeClock()
    call = _held(clock=clock)
    clock.advance(59)
    # Still in time at 59 s: another call's check would not expire it.
    assert decisions.expire_due(clock) == 0
    clock.advance(1)
    with pytest.raises(tools.DecisionRefused, match="expired at 2026-12-01 09:01:00 UTC"):
        tools.approve(call.id, approver(), clock=clock)
    call.refresh_from_db()
    assert (call.status, call.error_kind) == ("expired", "expired")


def test_an_approved_call_not_resumed_in_time_expires():
    """The resume window is the same setting, counted from the approval."""
    clock = FakeClock()
    call = _held(clock=clock)
    tools.approve(call.id, approver(), clock=clock)
    clock.advance(ledger.expiry().total_seconds())
    assert decisions.expire_due(clock) == 1
    client = FakeClient()
    result = tools.resume(call.id, client=client, clock=clock)
    assert (result.status, result.is_error, client.calls) == ("expired", True, [])


def test_expire_due_leaves_decided_and_finished_calls_alone():
    """Only pending calls expire."""
    clock = FakeClock()
    denied = _held(clock=clock)
    tools.deny(denied.id, approver(), clock=clock)
    clock.advance(10 * 3600)
    assert decisions.expire_due(clock) == 0
    denied.refresh_from_db()
    assert denied.status == ToolCallStatus.DENIED
