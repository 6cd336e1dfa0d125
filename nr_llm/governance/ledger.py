"""Writing the tool-call ledger: each row in a transaction of its own, committed durably.

A caller's rollback never erases an audit row, and a database crash never erases the row of a
call that ran: every write here runs through ``run_in_own_transaction``
(``nr_llm/own_transaction.py``), in place on the caller's connection when it has no transaction
open, else on a writer thread, durably at the site's own ``synchronous_commit``: a call's row
and its outcome are each one statement, committed in autocommit where the caller has no
transaction (one round trip), else in ``atomic(durable=True)``. A call costs the ledger two ORM
statements (its row as it starts, its outcome), an awaiting or refused call one. When a row
cannot be written (``LedgerUnavailable``), the caller decides (``tools/execution.py``): a
running call is not sent, a held call fails closed.

A running row's ``started_at`` is the database's clock (``Now()``), so the reaper compares it
with the database's clock too and a worker whose clock lags never has a live call reaped.

An outcome write cannot leave a row ``running``: what cannot be kept of the outcome (an
answer the keys cannot encrypt, a write the database refuses) is dropped, and the row is
ended with what is known. A call that may have run (its request was written and no answer
proves the server refused it, ``nr_llm.mcp.may_have_run``) is ``failed`` with an error
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
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import DatabaseError, connection
from django.db.models import Field
from django.db.models.functions import Now

from ..conf import conf
from ..mcp import clean
from ..own_transaction import (
    caller_blocks_own_transaction,
    deadlocked,
    run_in_own_transaction,
    sqlite_refused,
)
from ..servers import credentials
from . import preview
from .models import ToolCall, ToolCallStatus

if TYPE_CHECKING:
    from ..models import McpServer, McpTool

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
    #: Run by a worker of the site's task backend (``tools.enqueue``), not by its caller.
    on_worker: bool = False
    # The server of a row with no tool (a resource read, a prompt get): its columns are filled
    # as a tool call's are, so the ledger's server filter and data class cover them too.
    server: McpServer | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        return digest_of(self.canonical)


def write(work: Callable[[], T], *, each_statement: bool = False) -> T:
    """Run ``work`` in the ledger's own durable transaction, or raise ``LedgerUnavailable``.

    ``each_statement``: the work's statements stand each on its own (a call's row, its outcome,
    a conditional move), so they may commit one by one (``run_in_own_transaction``).
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
            return run_in_own_transaction(work, name="nr-llm-ledger", each_statement=each_statement)
        except DatabaseError as exc:
            refused = sqlite_refused(exc) or (deadlocked(exc) and not each_statement)
            if refused and time.monotonic() + pause < waited_until:
                # Rolled back whole (a statement of its own may have committed already, so a
                # deadlock is retried only for one transaction): it runs again from the start.
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                continue
            raise _unavailable(exc) from exc
        except ValueError as exc:
            # psycopg2 refuses some values itself (a NUL in text) with a ValueError, where
            # psycopg 3 and the database raise a DatabaseError: the same refusal, one answer.
            raise LedgerUnavailable(
                f"the database driver refused a value ({type(exc).__name__})", detail=clean(str(exc), 500)
            ) from exc


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
    call_id: uuid.UUID | None = None,
) -> uuid.UUID:
    """Insert the call's row (one query); a refused call is written finished, at once.

    ``call_id``: the row's key, when the caller chose it. A write whose commit was not
    confirmed (a connection lost as it committed) and that then meets its own row is written.
    """
    row = _new_row(call, status, now, error_kind, result_text, call_id)
    try:
        write(lambda: row.save(force_insert=True), each_statement=True)
    except LedgerUnavailable:
        if not _exists(row.id):
            raise
    return row.id


def _exists(call_id: uuid.UUID) -> bool:
    try:
        return ToolCall.objects.filter(pk=call_id).exists()
    except DatabaseError:
        return False


def _new_row(
    call: NewCall, status: str, now: datetime, error_kind: str, result_text: str, call_id: uuid.UUID | None
) -> ToolCall:
    tool = call.tool
    server = tool.server if tool is not None else call.server
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
        result_preview_ciphertext=preview.kept(result_text),
        expires_at=now + expiry() if status == ToolCallStatus.AWAITING_APPROVAL else None,
        # The database's clock: the reaper judges a running row's age on it.
        started_at=Now() if status == ToolCallStatus.RUNNING else None,
        finished_at=now if finished else None,
        on_worker=call.on_worker,
        **call.actor,
    )


def may_have_run_kind(kind: str) -> str:
    """The error kind recorded for a call that may have run after failing with ``kind``."""
    return f"{MAY_HAVE_RUN}:{kind}"[:ERROR_KIND_CHARS]


def may_have_run(call: ToolCall) -> bool:
    """The row's call may have run: its outcome is unknown, not a failure."""
    return call.error_kind.startswith(MAY_HAVE_RUN)


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
    also: Sequence[Callable[[], None]] = (),
) -> None:
    """Record the outcome of a running call (one query; a second without the kept answer when
    the database refuses the first). Raises only ``LedgerUnavailable``: the row could not be
    written at all.

    ``also``: bookkeeping written after the outcome in the same transaction (on SQLite one commit
    for both), never at the outcome's cost: each (a server's health stamp, ``servers.health.Stamp``)
    in a savepoint of its own, swallowing its failure.
    """
    ended = {
        "status": ToolCallStatus.FAILED if is_error else ToolCallStatus.SUCCEEDED,
        "error_kind": error_kind[:ERROR_KIND_CHARS],
        "duration_ms": max(0, duration_ms),
        "era": era[:16],
        "finished_at": now,
    }
    kept = preview.kept(result_text, structured)

    def ended_with(**changes: Any) -> Callable[[], None]:
        def work() -> None:
            _end(call_id, changes)
            for rider in also:
                rider()

        return work

    try:
        write(ended_with(result_preview_ciphertext=kept, **ended), each_statement=True)
    except LedgerUnavailable:
        if not kept:
            raise
        write(ended_with(**ended), each_statement=True)


_ends: dict[tuple[str, str, tuple[str, ...]], tuple[str, tuple[Field[Any, Any], ...]]] = {}


def _end(call_id: uuid.UUID, changes: dict[str, Any]) -> int:
    """``ToolCall.objects.filter(id=call_id, status="running").update(**changes)`` but for its
    compiling, which the ORM redoes per call (about 0.4 ms of CPU a call, more after the wait for
    the server's answer has let other processes take the caches; measured for issue 40); sent
    through Django's cursor, each value prepared by its field as ``update()`` does."""
    key = (connection.alias, connection.vendor, tuple(changes))
    built = _ends.get(key)
    if built is None:
        quote = connection.ops.quote_name
        fields = tuple(_field(name) for name in changes)
        assigned = ", ".join(f"{quote(str(field.column))} = %s" for field in fields)
        table, status = quote(ToolCall._meta.db_table), quote(str(_field("status").column))
        sql = f"UPDATE {table} SET {assigned} WHERE {quote(str(_field('id').column))} = %s AND {status} = %s"
        built = _ends[key] = (sql, fields)
    sql, fields = built
    values = [field.get_db_prep_save(changes[field.name], connection) for field in fields]
    values.append(_field("id").get_db_prep_value(call_id, connection))
    values.append(ToolCallStatus.RUNNING.value)
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        return int(cursor.rowcount)


def _field(name: str) -> Field[Any, Any]:
    field = ToolCall._meta.get_field(name)
    assert isinstance(field, Field)
    return field


def expiry() -> timedelta:
    return timedelta(seconds=conf.APPROVAL_EXPIRY_SECONDS)


def arguments_of(call: ToolCall) -> dict[str, Any]:
    """The call's arguments in clear (raises ``CredentialUnavailable`` without the key)."""
    if not call.arguments_ciphertext:
        return {}
    value = json.loads(credentials.decrypt(call.arguments_ciphertext))
    return value if isinstance(value, dict) else {}
