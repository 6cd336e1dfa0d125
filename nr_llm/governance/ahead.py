"""A running call's ledger row sent ahead: its INSERT goes to PostgreSQL at once and its answer
is read only when the call's request is about to be written.

A call's first row is committed before anything of the call reaches its server, and a call
prepared from a remembered catalogue row learns only from that INSERT's answer whether it may
go at all (its guard, ``statements.Guard``). Waiting for the answer before the client starts
costs the caller the statement's whole round trip, most of a millisecond after the idle spell
of a model's turn, while the client then spends about as long building its request (headers,
JSON, the pooled TLS connection) before the first byte is written. Sent ahead, the database
works while the client builds; the answer is read where the request would be written
(``mcp.wire.first_write``), and a row that was not written (a guard that failed, a refused
write) stops the request there, before any byte of it, exactly as it stopped the call before.

Nothing but the statement changes: the same SQL as ``statements.insert`` (one autocommit
statement, relaxed as the call's rows are, ``own_transaction.relaxed``), sent with libpq's
asynchronous calls on the caller's own connection, its values bound on the client as Django's
default cursor binds them (a statement sent ahead is never a prepared one). Only where the write
would run in place anyway (PostgreSQL, autocommit, no transaction open) and nothing of the
site's watches the connection's queries (Django's query log, ``execute_wrapper``): those see
every statement through Django's cursor, which this one bypasses. While the answer is unread,
any query of Django's on the connection reads it first (an execute wrapper of our own), so the
connection is never asked for a second statement while one is in flight.
"""

from __future__ import annotations

import selectors
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model

from . import statements
from .statements import Guard


class Sent:
    """An INSERT sent on the calling thread's PostgreSQL connection, its answer not yet read."""

    def __init__(self, db: BaseDatabaseWrapper, row: Model, guarded: bool) -> None:
        self._db = db
        self._row = row
        self._guarded = guarded
        self._inserted: bool | None = None
        self._failure: DatabaseError | None = None
        db.execute_wrappers.append(self._first)

    def answer(self) -> bool:
        """Whether the row was inserted (a guard that did not hold: False), reading the answer if
        it was not read yet; a refused statement raises Django's ``DatabaseError`` (each time)."""
        self._read()
        if self._failure is not None:
            raise self._failure
        assert self._inserted is not None
        return self._inserted

    def _read(self) -> None:
        if self._inserted is not None or self._failure is not None:
            return
        db = self._db
        if self._first in db.execute_wrappers:
            db.execute_wrappers.remove(self._first)
        try:
            with db.wrap_database_errors:
                if db.connection is None:  # closed meanwhile: the answer went with it
                    raise DatabaseError("the connection closed before the row's answer was read")
                inserted = _rows(db.connection) == 1
        except DatabaseError as exc:
            self._failure = exc
            return
        self._inserted = inserted or not self._guarded
        if inserted:
            statements._inserted(self._row, db)

    def _first(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        # Another query on this connection while the answer is in flight: the answer first
        # (libpq takes one statement at a time), kept for ``answer``.
        self._read()
        return execute(sql, params, many, context)


def send(row: Model, guard: Guard | None = None) -> Sent | None:
    """Send ``statements.insert(row, guard)`` without waiting for its answer; None where it is
    not sent ahead (see the module's docstring): the caller then writes it as usual.

    Called inside ``own_transaction.in_place_relaxed``, which decides the connection may take it.
    """
    db = statements.database()
    if db.vendor != "postgresql" or db.queries_logged or db.execute_wrappers:
        return None
    from psycopg import ClientCursor

    with db.wrap_database_errors:
        db.ensure_connection()
        raw = db.connection
        sql, values = statements._insert(db, row, guard)
        # Bound as Django's default (client-binding) cursor binds it, adapters included.
        text = ClientCursor(raw).mogrify(sql, values).encode(raw.info.encoding)
        pgconn = raw.pgconn
        pgconn.send_query(text)
        _flush(pgconn)
    return Sent(db, row, guard is not None)


def _wait(pgconn: Any, events: int) -> int:
    with selectors.DefaultSelector() as selector:
        selector.register(pgconn.socket, events)
        ready = 0
        while not ready:
            for _key, mask in selector.select():
                ready |= mask
        return ready


def _flush(pgconn: Any) -> None:
    """Everything of the statement handed to the socket (libpq's non-blocking flush)."""
    while pgconn.flush() != 0:
        if _wait(pgconn, selectors.EVENT_READ | selectors.EVENT_WRITE) & selectors.EVENT_READ:
            pgconn.consume_input()


def _rows(raw: Any) -> int:
    """Read the statement's results; the rows it inserted. A failure raises psycopg's error."""
    from psycopg import errors, pq

    pgconn = raw.pgconn
    count, failure = 0, None
    while True:
        pgconn.consume_input()
        while pgconn.is_busy():
            _wait(pgconn, selectors.EVENT_READ)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            break
        if result.status == pq.ExecStatus.FATAL_ERROR:
            failure = failure or errors.error_from_result(result, encoding=raw.info.encoding)
        elif result.command_tuples is not None:
            count = result.command_tuples
    if failure is not None:
        raise failure
    return count
