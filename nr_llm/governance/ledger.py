"""Writing the tool-call ledger: each row in a transaction of its own.

A caller's rollback never erases an audit row, so every write here runs through
``run_in_own_transaction``: on one of a few writer threads that keep their connection open
(``nr_llm/own_transaction.py``), so a write costs its statement and a hand-over, no thread and
no connection; a call's own rows, for a caller with no transaction open, on the caller's own
connection (no hand-over): on PostgreSQL in autocommit, on SQLite in a transaction of their own.
A call costs the ledger two queries (the row as it starts, its outcome), an awaiting or refused
call one. On PostgreSQL a call's own row does not wait for the disk at commit
(``own_transaction.relaxed``: one autocommit statement): a server crash may lose the last
fraction of a second of them, a caller's rollback none. A held call's row, every decision and
every claim are committed as the site's other writes are (they wait for the disk unless the site
chose otherwise): exactly once and "fails closed" rest on them. When a row cannot be written
(``LedgerUnavailable``), the caller decides: a tool that requires approval fails closed, any
other runs and the lost row is logged at ERROR (``execution.py``).

An outcome write cannot leave a row ``running``: what cannot be kept of the outcome (an
answer the keys cannot encrypt, a write the database refuses) is dropped, and the row is
ended with what is known. A call that may have run (its request was written and no answer
proves the server refused it, ``nr_llm.mcp.protocol.resend.may_have_run``) is ``failed`` with an error
kind ``may_have_run:<kind>``, never a plain failure.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from django.db import DatabaseError, connection

from ..conf import conf
from ..mcp.wire.text import clean, encodable
from ..own_transaction import (
    caller_blocks_own_transaction,
    in_place_relaxed,
    relaxed,
    run_in_own_transaction,
    sqlite_refused,
)
from ..servers import credentials
from ..servers.credentials import CredentialUnavailable
from . import ahead, statements
from .models import ToolCall, ToolCallStatus

if TYPE_CHECKING:
    from ..models import McpTool

T = TypeVar("T")
WallClock = Callable[[], datetime]

NAME_CHARS = 200
LABEL_CHARS = 150
ERROR_KIND_CHARS = 32
# How long a write refused by SQLite's lock is tried again (as long as SQLite's own default busy
# timeout): concurrent resumes and their outcomes queue instead of failing.
LOCKED_WAIT_SECONDS = 5.0
#: The error kind's prefix of a call that may have run: the tool's effect is unknown.
MAY_HAVE_RUN = "may_have_run"


class LedgerUnavailable(Exception):
    """A ledger row could not be written; the message says why (never an argument's value).

    The message can reach a model (it is part of the tool result), so it names the database's
    error by type only; ``detail`` keeps the driver's own text (SQL, relation names) for the log.
    """

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail

    def for_log(self) -> str:
        return f"{self} [{self.detail}]" if self.detail else str(self)


class GuardFailed(Exception):
    """A guarded row was not written: the catalogue no longer holds what the call was prepared
    from (``tools.lookup.Guard``). Nothing was written, and the call was not sent."""


def canonical_json(arguments: dict[str, Any]) -> str:
    """The one spelling of ``arguments`` the digest is taken of: sorted keys, no spaces.

    Raises ``ValueError`` or ``TypeError`` for what JSON cannot carry (NaN, objects): such a
    call could be neither recorded nor sent.
    """
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def digest_of(canonical: str) -> str:
    return hashlib.sha256(canonical.encode()).hexdigest()


def actor_fields(actor: object) -> dict[str, Any]:
    """A user (``request.user``) or a caller's label, as the row keeps it."""
    if isinstance(actor, str):
        return {"actor_user_id": None, "actor_label": clean(actor, LABEL_CHARS)}
    if actor is None:
        return {"actor_user_id": None, "actor_label": ""}
    if getattr(actor, "is_authenticated", False):
        username = actor.get_username()  # type: ignore[attr-defined]
        return {"actor_user_id": actor.pk, "actor_label": clean(username, LABEL_CHARS)}  # type: ignore[attr-defined]
    return {"actor_user_id": None, "actor_label": "anonymous"}


@dataclass(frozen=True)
class NewCall:
    """What is known of a call when it starts: the row's first write."""

    tool_name: str
    # The arguments in clear: out of repr, so a frame's locals in an error report do not show them.
    canonical: str = field(repr=False)
    actor: dict[str, Any]
    tool: McpTool | None = field(default=None, repr=False)
    data_class_ceiling: str = ""

    @property
    def digest(self) -> str:
        return digest_of(self.canonical)


def write(work: Callable[[], T], *, durable: bool = True) -> T:
    """Run ``work`` in the ledger's own transaction, or raise ``LedgerUnavailable``.

    ``durable=False``: the commit does not wait for the disk (``own_transaction.relaxed``), for
    a call's own row as it starts and ends; decisions and claims always wait.
    """
    if caller_blocks_own_transaction():
        # Waiting would wait on the caller itself: SQLite's one writer is its transaction.
        raise LedgerUnavailable(
            "on SQLite the ledger cannot be written while the calling thread is inside a transaction"
        )
    waited_until = time.monotonic() + LOCKED_WAIT_SECONDS
    pause = 0.005
    while True:
        try:
            return run_in_own_transaction(work if durable else relaxed(work), name="nr-llm-ledger")
        except DatabaseError as exc:
            if sqlite_refused(exc) and time.monotonic() + pause < waited_until:
                # Rolled back whole: nothing of it was kept, so it runs again from the start.
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                continue
            raise _unavailable(exc) from exc


def _unavailable(exc: DatabaseError) -> LedgerUnavailable:
    return LedgerUnavailable(
        f"the database refused the write ({type(exc).__name__})", detail=clean(str(exc), 500)
    )


def open_call(
    call: NewCall,
    status: str,
    now: datetime,
    *,
    error_kind: str = "",
    result_text: str = "",
    guard: statements.Guard | None = None,
    call_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Insert the call's row (one query); a refused call is written finished, at once.

    ``guard`` (``statements.insert``): the row is written only if it holds, else ``GuardFailed``.
    ``call_id``: the row's key, when the caller chose it (a second attempt at the same call's
    row then meets the first, if that one was written after all, instead of adding a second).
    """
    row = _new_row(call, status, now, error_kind, result_text, call_id)
    # A held call's row is what an approver will find: it waits for the disk. A running or
    # refused call's row may not (docs/operator-guide.md, "The ledger's cost").
    _written(row, guard, durable=status == ToolCallStatus.AWAITING_APPROVAL)
    return row.id


def _written(row: ToolCall, guard: statements.Guard | None, *, durable: bool) -> None:
    if guard is None:
        write(lambda: statements.insert(row), durable=durable)
    elif not write(lambda: statements.insert(row, guard), durable=durable):
        raise GuardFailed(f"tool {row.tool_name!r} changed in the catalogue since it was read")


class Opening:
    """A running call's row as it is written (``open_running``): ``settle()`` is its key once
    written, or what ``open_call`` raised (``GuardFailed``, ``LedgerUnavailable``), the same
    every time it is asked."""

    def __init__(
        self,
        call_id: uuid.UUID,
        *,
        failure: Exception | None = None,
        sent: ahead.Sent | None = None,
        row: ToolCall | None = None,
        guard: statements.Guard | None = None,
    ) -> None:
        self._call_id = call_id
        self._failure = failure
        #: The INSERT of ``row`` sent ahead, its answer not read yet; None once read (or never sent).
        self.sent = sent
        self._row = row
        self._guard = guard

    def settle(self) -> uuid.UUID:
        if self.sent is not None:
            sent, self.sent = self.sent, None
            try:
                self._read(sent)
            except (GuardFailed, LedgerUnavailable) as exc:
                self._failure = exc
        if self._failure is not None:
            raise self._failure
        return self._call_id

    def _read(self, sent: ahead.Sent) -> None:
        assert self._row is not None
        try:
            inserted = sent.answer()
        except DatabaseError as exc:
            if connection.is_usable():
                raise _unavailable(exc) from exc  # the statement's own failure
            # The connection broke: the write is made again as ``write`` makes it (a fresh
            # connection; the same key, so a row written after all is met, not doubled).
            connection.close()
            try:
                _written(self._row, self._guard, durable=False)
            except LedgerUnavailable:
                # Met: the first INSERT committed before the connection broke (the key is this
                # call's own, chosen here), so the row is written, its guard held then.
                if not _exists(self._row.id):
                    raise
            return
        if not inserted:
            raise GuardFailed(f"tool {self._row.tool_name!r} changed in the catalogue since it was read")


def _exists(call_id: uuid.UUID) -> bool:
    try:
        return ToolCall.objects.filter(pk=call_id).exists()
    except DatabaseError:
        return False


def open_running(
    call: NewCall,
    now: datetime,
    *,
    guard: statements.Guard | None = None,
    call_id: uuid.UUID | None = None,
    ahead_of_request: bool = False,
) -> Opening:
    """``open_call`` for a call about to run, as an ``Opening`` whose ``settle()`` says how the
    write ended.

    ``ahead_of_request``: the caller reads ``settle()`` before its request's first byte is
    written (``mcp.wire.first_write``), so on PostgreSQL the INSERT may be sent now and its answer
    read then (``governance.ahead``). Otherwise, and where it cannot be sent ahead, the row is
    written here (``open_call``), before this returns.
    """
    if ahead_of_request and statements.database().vendor == "postgresql":
        row = _new_row(call, ToolCallStatus.RUNNING, now, "", "", call_id)
        call_id = row.id
        try:
            sent = in_place_relaxed(lambda: ahead.send(row, guard))
        except DatabaseError:
            # Not sent (the connection was found broken): written below, as any row is.
            sent = None
            if not connection.is_usable():
                connection.close()
        if sent is not None:
            return Opening(row.id, sent=sent, row=row, guard=guard)
    try:
        return Opening(open_call(call, ToolCallStatus.RUNNING, now, guard=guard, call_id=call_id))
    except (GuardFailed, LedgerUnavailable) as exc:
        return Opening(call_id or uuid.uuid4(), failure=exc)


def _new_row(
    call: NewCall, status: str, now: datetime, error_kind: str, result_text: str, call_id: uuid.UUID | None
) -> ToolCall:
    tool = call.tool
    server = tool.server if tool is not None else None
    finished = status in (ToolCallStatus.FAILED, ToolCallStatus.SUCCEEDED)
    return ToolCall(
        id=call_id or uuid.uuid4(),
        created=now,
        tool_name=clean(call.tool_name, NAME_CHARS),
        tool_id=tool.pk if tool is not None else None,
        server_id=server.pk if server is not None else None,
        server_identifier=server.identifier if server is not None else "",
        remote_name=tool.remote_name if tool is not None else "",
        tool_description=tool.description if tool is not None else "",
        tool_input_schema=tool.input_schema if tool is not None else {},
        data_class=server.data_class if server is not None else "",
        data_class_ceiling=call.data_class_ceiling,
        arguments_ciphertext=credentials.encrypt(call.canonical) if call.canonical else "",
        arguments_digest=call.digest if call.canonical else "",
        status=status,
        error_kind=error_kind,
        result_preview_ciphertext=_kept(result_text),
        expires_at=now + expiry() if status == ToolCallStatus.AWAITING_APPROVAL else None,
        started_at=now if status == ToolCallStatus.RUNNING else None,
        finished_at=now if finished else None,
        **call.actor,
    )


def may_have_run_kind(kind: str) -> str:
    """The error kind recorded for a call that may have run after failing with ``kind``."""
    return f"{MAY_HAVE_RUN}:{kind}"[:ERROR_KIND_CHARS]


def may_have_run(call: ToolCall) -> bool:
    """The row's call may have run: its outcome is unknown, not a failure."""
    return call.error_kind.startswith(MAY_HAVE_RUN)


class Rider(Protocol):
    """Bookkeeping that rides in an outcome's write (a server's health stamp,
    ``servers.health.Stamp``), run when called, reporting and swallowing its own failure."""

    def __call__(self) -> None: ...


def finish(
    call_id: uuid.UUID,
    *,
    is_error: bool,
    error_kind: str,
    duration_ms: int,
    era: str,
    result_text: str,
    now: datetime,
    structured: dict[str, Any] | None = None,
    also: Sequence[Rider] = (),
) -> None:
    """Record the outcome of a running call (one query; a second without the kept answer when
    the database refuses the first). Raises only ``LedgerUnavailable``: the row could not be
    written at all.

    ``also``: bookkeeping written after the outcome in the same transaction (on SQLite one commit
    for both), never at the outcome's cost: each in a savepoint of its own.
    """
    ended = {
        "status": ToolCallStatus.FAILED if is_error else ToolCallStatus.SUCCEEDED,
        "error_kind": error_kind[:ERROR_KIND_CHARS],
        "duration_ms": max(0, duration_ms),
        "era": era[:16],
        "finished_at": now,
    }
    running = {"id": call_id, "status": ToolCallStatus.RUNNING}
    kept = _kept(result_text, structured)

    def ended_with(**changes: Any) -> Callable[[], None]:
        outcome = statements.Update(ToolCall, changes, running)

        def work() -> None:
            statements.run(outcome)
            for rider in also:
                rider()

        return work

    try:
        write(ended_with(result_preview_ciphertext=kept, **ended), durable=False)
    except LedgerUnavailable:
        if not kept:
            raise
        write(ended_with(**ended), durable=False)


def expiry() -> timedelta:
    return timedelta(seconds=conf.APPROVAL_EXPIRY_SECONDS)


STRUCTURED_HEADING = "\n[structured content]\n"


def preview(text: str, structured: dict[str, Any] | None = None) -> str:
    """The kept start of an answer, encrypted: it may hold what the arguments asked for.

    Structured content is kept after the text, pretty-printed, both within the limit (the text
    gets at most half when both do not fit): an operator reads the shape the model's code got.
    """
    limit = conf.TOOL_CALL_PREVIEW_CHARS
    shown = json.dumps(structured, ensure_ascii=False, indent=2) if structured is not None else ""
    if shown and text.strip() == json.dumps(structured, ensure_ascii=False):
        text = ""  # the text only mirrors it: kept once, the readable way
    if limit == 0 or not (text or shown):
        return ""
    if not shown:
        return credentials.encrypt(encodable(_clip(text, limit)))
    room = limit - len(STRUCTURED_HEADING)
    if room < 2:
        return credentials.encrypt(encodable(_clip(text or shown, limit)))
    kept_text = _clip(text, max(room - len(shown), room // 2)) if text else ""
    return credentials.encrypt(
        encodable(kept_text + STRUCTURED_HEADING + _clip(shown, room - len(kept_text)))
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"[: max(0, limit)]


def _kept(text: str, structured: dict[str, Any] | None = None) -> str:
    """``preview``, or "" when it cannot be made: the row is written without the answer."""
    try:
        return preview(text, structured)
    except (CredentialUnavailable, ValueError):
        return ""  # no key to encrypt with (or none configured): the answer is not kept


def arguments_of(call: ToolCall) -> dict[str, Any]:
    """The call's arguments in clear (raises ``CredentialUnavailable`` without the key)."""
    if not call.arguments_ciphertext:
        return {}
    value = json.loads(credentials.decrypt(call.arguments_ciphertext))
    return value if isinstance(value, dict) else {}


def preview_of(call: ToolCall) -> str:
    return credentials.decrypt(call.result_preview_ciphertext) if call.result_preview_ciphertext else ""
