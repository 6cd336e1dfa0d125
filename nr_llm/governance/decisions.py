"""The approval state machine: approve, deny, expire, and the claim that lets a call run once.

::

    awaiting_approval --approve--> approved --claim (resume)--> running --> succeeded | failed
            |                          |
            +--deny--> denied <--deny--+
            +--past expires_at--> expired <--past expires_at (not resumed in time)

Every move is one conditional ``UPDATE … WHERE status = <the state it leaves>`` inside the
ledger's own transaction, after a ``SELECT … FOR UPDATE`` of the row: PostgreSQL serialises
two deciders on the row lock, and on SQLite (where ``FOR UPDATE`` does nothing) the
condition alone lets exactly one of them move the row. The claim is that UPDATE alone, before
any read, so racing resumes queue for SQLite's lock instead of being refused (``claim``); a
write SQLite refuses at once is tried again (``ledger.write``). A decision binds the digest of the
arguments the approver was shown; ``resume`` runs only a call whose arguments still have it.

Expiry is judged on the database server's clock, both sides: ``expires_at`` is counted from it
and compared with it (``approval_now``), so a worker or an admin host whose clock is minutes off
neither expires a call early nor runs one late. A clock a test injects stands for both sides.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.dispatch import Signal
from django.utils import timezone

from ..conf import conf
from ..mcp import clean
from . import dbclock, ledger
from .ledger import LedgerUnavailable, WallClock
from .models import PENDING, ToolCall, ToolCallStatus

APPROVE_PERMISSION = "nr_llm.approve_toolcall"
NOTE_CHARS = 2000

#: Sent (``call_id=``) once the caller's transaction commits an approval of a call enqueued for a
#: worker (``tools.enqueue``): the tool side enqueues its task (connected in ``apps.ready``), so
#: a worker runs it with no ``resume()``.
worker_call_approved = Signal()


class DecisionRefused(Exception):
    """An approval or denial that was not recorded; the message says why, for the person."""


@dataclass(frozen=True)
class Decision:
    call_id: uuid.UUID
    status: str
    approver: str
    decided_at: datetime
    self_approved: bool = False


@dataclass(frozen=True)
class Claim:
    """What ``resume`` found: the row as read, and whether this caller may run it now."""

    call: ToolCall
    claimed: bool


def approval_now(clock: WallClock | None) -> datetime | Now:
    """The moment expiry is judged at: an injected clock's (a test's) for both sides; for the
    process's own clock (None, ``timezone.now``), the database's ``Now()``, inside the statement."""
    return Now() if clock is None or clock is timezone.now else clock()


def approval_moment(clock: WallClock | None) -> datetime:
    """``approval_now`` as a value (one read of the database's clock when it is the database's)."""
    now = approval_now(clock)
    if isinstance(now, datetime):
        return now
    try:
        return dbclock.database_now()
    except DatabaseError as exc:
        raise LedgerUnavailable(
            f"the database's clock could not be read ({type(exc).__name__})", detail=clean(str(exc), 500)
        ) from exc


def parse_call_id(value: object) -> uuid.UUID:
    """A call id from a URL, a command line or a caller; ``DecisionRefused`` when it is none."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value).strip())
    except ValueError:
        raise DecisionRefused(f"{clean(value, 60)!r} is not a tool call id (a UUID).") from None


def approve(
    call_id: object, user: Any, note: str = "", *, digest: str | None = None, clock: WallClock | None = None
) -> Decision:
    """Approve an awaiting call for ``user`` (who needs ``nr_llm.approve_toolcall``).

    ``digest``: the arguments digest the approver was shown; a different one is refused, so
    what is approved is exactly what was read. Self-approval is recorded as such, and refused
    when ``NR_LLM_APPROVAL_SECOND_APPROVER`` is on.
    """
    return _decide(call_id, user, note, ToolCallStatus.APPROVED, digest, clock)


def deny(call_id: object, user: Any, note: str = "", *, clock: WallClock | None = None) -> Decision:
    """Deny an awaiting call, or withdraw an approval the call has not yet run on."""
    return _decide(call_id, user, note, ToolCallStatus.DENIED, None, clock)


def _decide(
    call_id: object, user: Any, note: str, verdict: str, digest: str | None, clock: WallClock | None
) -> Decision:
    pk = parse_call_id(call_id)
    verb, done = ("approve", "approved") if verdict == ToolCallStatus.APPROVED else ("deny", "denied")
    if not (getattr(user, "is_active", False) and user.has_perm(APPROVE_PERMISSION)):
        who = user.get_username() if getattr(user, "is_authenticated", False) else "an anonymous user"
        raise DecisionRefused(
            f"{who} may not {verb} tool calls: that needs the permission “Can approve or deny tool calls” "
            f"({APPROVE_PERMISSION})."
        )
    on_worker: list[bool] = []
    approver = {"approver_id": user.pk, "approver_label": clean(user.get_username(), ledger.LABEL_CHARS)}

    def move() -> Decision | str:
        call = ToolCall.objects.select_for_update().filter(pk=pk).first()
        if call is None:
            return f"There is no tool call {pk}."
        now = approval_moment(clock)  # read with the row locked: the decision's own moment
        if _expire_if_due(call, now):
            expired = _moment(call.expires_at)
            return f"Tool call {pk} expired at {expired} without being run; nothing was {done}."
        leaving = (ToolCallStatus.AWAITING_APPROVAL,) if verdict == ToolCallStatus.APPROVED else PENDING
        if call.status not in leaving:
            return f"Tool call {pk} is already {_state(call)}; nothing was {done}."
        if digest is not None and digest != call.arguments_digest:
            return (
                f"Tool call {pk} has other arguments than the ones shown (digest mismatch); "
                "nothing was approved."
            )
        own = _is_own(call, user)
        on_worker[:] = [call.on_worker]
        if own and verdict == ToolCallStatus.APPROVED and conf.APPROVAL_SECOND_APPROVER:
            return (
                f"Tool call {pk} was made by {call.actor_label}: another person must approve it "
                "(NR_LLM_APPROVAL_SECOND_APPROVER is on)."
            )
        changes: dict[str, Any] = {
            "status": verdict,
            "decided_at": now,
            "decision_note": note.strip()[:NOTE_CHARS],
            "self_approved": own and verdict == ToolCallStatus.APPROVED,
            **approver,
        }
        if verdict == ToolCallStatus.APPROVED:
            # The resume window starts at the decision, so an approval near the end of the
            # wait is not worthless; the digest is the one the approver's row carried.
            changes.update(approved_digest=call.arguments_digest, expires_at=now + ledger.expiry())
        else:
            # A withdrawn approval binds nothing any more.
            changes.update(finished_at=now, approved_digest="")
        moved = ToolCall.objects.filter(pk=pk, status=call.status).update(**changes)
        if not moved:
            return f"Tool call {pk} was decided by someone else meanwhile; nothing was {done}."
        return Decision(pk, verdict, approver["approver_label"], now, changes["self_approved"])

    try:
        outcome = ledger.write(move)
    except LedgerUnavailable as exc:
        raise DecisionRefused(f"The decision on tool call {pk} could not be recorded: {exc}.") from exc
    if isinstance(outcome, str):
        raise DecisionRefused(outcome)
    if verdict == ToolCallStatus.APPROVED and on_worker == [True]:
        transaction.on_commit(lambda: worker_call_approved.send(sender=ToolCall, call_id=pk))
    return outcome


def claim(call_id: uuid.UUID, clock: WallClock | None) -> Claim | None:
    """Move an approved call to running, for one caller only; None when there is no such call."""
    now = approval_now(clock)

    def move() -> Claim | None:
        # One conditional UPDATE, before any read: PostgreSQL serialises racing claims on the
        # row lock and the losers match no row; on SQLite the UPDATE asks for the write lock
        # first and waits its turn, where a read that then writes is refused at once (the
        # losers of a race were told "could not be resumed" while the winner ran the call).
        claimed = ToolCall.objects.filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now),
            pk=call_id,
            status=ToolCallStatus.APPROVED,
        ).update(status=ToolCallStatus.RUNNING, started_at=Now())  # the reaper's clock
        call = ToolCall.objects.filter(pk=call_id).first()
        if call is None:
            return None
        if not claimed and call.status in PENDING:
            _expire_if_due(call, approval_moment(clock))
        return Claim(call, bool(claimed))

    # The conditional UPDATE decides alone: it needs no transaction around the read after it.
    return ledger.write(move, each_statement=True)


def expire_due(clock: WallClock | None = None) -> int:
    """Expire every pending call past its time (the admin runs it before listing calls)."""
    now = approval_now(clock)
    return ledger.write(
        lambda: ToolCall.objects.filter(status__in=PENDING, expires_at__lte=now).update(**_expired(now))
    )


def _expired(now: datetime | Now) -> dict[str, Any]:
    """What expiry writes, for many rows at once and for one."""
    return {"status": ToolCallStatus.EXPIRED, "error_kind": "expired", "finished_at": now}


def _expire_if_due(call: ToolCall, now: datetime) -> bool:
    if call.status not in PENDING or call.expires_at is None or call.expires_at > now:
        return call.status == ToolCallStatus.EXPIRED
    change = _expired(now)
    if ToolCall.objects.filter(pk=call.pk, status=call.status).update(**change):
        for field, value in change.items():
            setattr(call, field, value)
    else:
        call.refresh_from_db()
    return call.status == ToolCallStatus.EXPIRED


def _is_own(call: ToolCall, user: Any) -> bool:
    if call.actor_user_id is not None:
        return bool(call.actor_user_id == user.pk)
    return bool(call.actor_label) and call.actor_label == user.get_username()


def _state(call: ToolCall) -> str:
    label = ToolCallStatus(call.status).label.lower() if call.status in ToolCallStatus.values else call.status
    if call.status in (ToolCallStatus.APPROVED, ToolCallStatus.DENIED) and call.approver_label:
        return f"{label} by {call.approver_label} at {_moment(call.decided_at)}"
    if call.status in (ToolCallStatus.SUCCEEDED, ToolCallStatus.FAILED):
        return f"run ({label} at {_moment(call.finished_at)})"
    return label


def _moment(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M:%S} UTC" if value is not None else "an unknown time"
