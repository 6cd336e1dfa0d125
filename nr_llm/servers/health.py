"""Liveness is observed, not inferred (ADR-154): stamp each successful operation.

An operator reading "last contact 2 minutes ago" next to a failing tool knows the
server answers and the tool is the problem; so only a completed operation may stamp,
and the stamp must never cost the caller its answer, nor its time.

An operation's stamp (an import, a ping) is handed to the writer threads
(``nr_llm.own_transaction``) and not waited for: it runs on their connection, never on the
caller's, and on PostgreSQL skips a row another transaction holds (``FOR NO KEY UPDATE SKIP
LOCKED``, one statement in autocommit): a call that already has its answer never waits on
someone else's lock, and the next operation stamps again. A server's stamp that finds an
earlier one of the same server still waiting for a writer takes its place (the row keeps the
latest contact either way): however many calls a server answers at once, it costs at most one
waiting write. On SQLite, whose one write lock the
writer thread takes for stamps and ledger rows alike, the caller waits for its stamp (no row
lock to wait on there), so its own next write never meets it. A caller inside a transaction of
its own (``ATOMIC_REQUESTS``, an ``atomic`` block) keeps the stamp in a savepoint of it: the
server row may be the caller's own uncommitted one, which another connection would not see, and
on SQLite the caller holds the one write lock; there too a locked row is skipped.

A caller that writes anyway right after the operation (a tool call's ledger outcome) collects
its stamps (``carried()``). On SQLite they ride in that write (``rides_along()``): one commit
for both. Elsewhere they are handed over once the outcome is written, not waited for: the
caller's return never waits for the stamp's round trip.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import wait
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Field
from django.utils import timezone

from ..mcp import Endpoint
from ..models import McpServer
from ..own_transaction import hand_over

logger = logging.getLogger("nr_llm.health")


class Stamp:
    """One server's contact: one UPDATE of its two contact columns (``update``), run when
    called, swallowing its failure.
    Like ``QuerySet.update()`` it leaves ``updated`` (auto_now) and the import fields alone: a
    contact is not an edit, and must not hide when an operator last changed the row."""

    def __init__(self, identifier: str, now: datetime, latency_ms: int) -> None:
        self.identifier = identifier
        self.now = now
        self.latency_ms = max(0, int(latency_ms))

    def update(self) -> int:
        if connection.vendor == "postgresql":
            return self._skipping_a_held_row()
        return McpServer.objects.filter(identifier=self.identifier).update(
            last_contact=self.now, last_latency_ms=self.latency_ms
        )

    def _skipping_a_held_row(self) -> int:
        """PostgreSQL: a row another transaction holds (an operator saving the server) is skipped,
        not waited for, in a transaction or in autocommit (a writer's one statement, which the
        ORM refuses to write with ``select_for_update``): the next operation stamps again.
        (MySQL refuses an UPDATE that selects from its own table, SQLite has no row locks.) The
        lock is the UPDATE's own, FOR NO KEY UPDATE: FOR UPDATE would also hold back a call's
        running row of this server (its foreign key check takes FOR KEY SHARE)."""
        quote = connection.ops.quote_name
        contact, latency, identifier, pk = (
            _column(name) for name in ("last_contact", "last_latency_ms", "identifier", "id")
        )
        table = quote(McpServer._meta.db_table)
        held = connection.ops.for_update_sql(skip_locked=True, no_key=True)
        sql = (
            f"UPDATE {table} SET {quote(str(contact.column))} = %s, {quote(str(latency.column))} = %s "
            f"WHERE {quote(str(pk.column))} IN (SELECT {quote(str(pk.column))} FROM {table} "
            f"WHERE {quote(str(identifier.column))} = %s {held})"
        )
        values = [contact.get_db_prep_save(self.now, connection), self.latency_ms, self.identifier]
        with connection.cursor() as cursor:
            cursor.execute(sql, values)
            return int(cursor.rowcount)

    def __call__(self) -> None:
        try:
            if connection.in_atomic_block:
                # A savepoint: a failing write must not leave the transaction it rides in aborted.
                with transaction.atomic():
                    self.update()
            else:
                self.update()  # one statement in autocommit (after a call's outcome)
        except Exception:
            # A reporting boundary: the operation already has its answer, and a bookkeeping
            # failure must never turn that into an error.
            logger.warning("could not record contact with MCP server %s", self.identifier, exc_info=True)


def _column(name: str) -> Field[Any, Any]:
    field = McpServer._meta.get_field(name)
    assert isinstance(field, Field)
    return field


#: The stamps of the operations the current caller carries into its own next write.
_carrier: ContextVar[list[Stamp] | None] = ContextVar("nr_llm_health_carrier", default=None)


class HealthRecorder:
    """The client's health sink: one UPDATE of two columns per successful operation.

    ``now`` is the wall-clock seam (a stamp is a point in time an operator reads, not
    a duration), injected so tests pin it instead of sleeping.
    """

    def __init__(self, now: Callable[[], datetime] = timezone.now) -> None:
        self._now = now

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        stamp = Stamp(endpoint.identifier, self._now(), latency_ms)
        if connection.in_atomic_block:
            stamp()  # in a savepoint of the caller's transaction (see the module's docstring)
            return
        carried_by = _carrier.get()
        if carried_by is not None:
            carried_by.append(stamp)
            return
        write([stamp])


@contextmanager
def carried() -> Iterator[list[Stamp]]:
    """Collect the stamps of the operations run inside instead of writing them; the caller runs
    them in its next own-transaction write (each swallows its failure), or ``write``s them."""
    stamps: list[Stamp] = []
    token = _carrier.set(stamps)
    try:
        yield stamps
    finally:
        _carrier.reset(token)


def rides_along() -> bool:
    """Whether a caller's carried stamps ride in its next ledger write (SQLite) rather than
    being ``write``n after it (elsewhere: not waited for)."""
    return connection.vendor == "sqlite"


def write(stamps: list[Stamp]) -> None:
    """Hand ``stamps`` to the writer threads, as a recorder does when nothing carries them."""
    if not stamps:
        return
    if connection.vendor == "sqlite":
        # One write at a time: a caller's next write must not meet its own stamp holding
        # the lock (an in-memory database refuses at once instead of waiting).
        wait([hand_over(lambda: _each(stamps))])
        return
    identifiers = _waiting.put(stamps)
    if identifiers:
        try:
            # Each stamp one statement in autocommit (it skips a held row itself): one round
            # trip on the writer, not five (BEGIN, SAVEPOINT, UPDATE, RELEASE, COMMIT) beside
            # the caller's next call.
            hand_over(lambda: _each(_waiting.take(identifiers)), each_statement=True)
        except Exception:
            # No writer to take them (a thread cannot start, at shutdown): taken back, so the
            # server's next stamp hands over a job of its own instead of waiting behind these.
            _waiting.take(identifiers)
            logger.warning(
                "could not hand over the contact stamps of %s", ", ".join(identifiers), exc_info=True
            )


#: How long an operator's own action (a connection test) waits for its stamp to be written.
SHOWN_WAIT_SECONDS = 5.0


def write_shown(stamps: list[Stamp]) -> None:
    """``write`` for an operation whose page shows the contact it made (the admin's connection
    test): waits, within a bound, so the page an operator sees next is not "never"."""
    if stamps:
        wait([hand_over(lambda: _each(stamps))], timeout=SHOWN_WAIT_SECONDS)


def _each(stamps: list[Stamp]) -> None:
    for stamp in stamps:
        stamp()


class _Waiting:
    """The stamps handed over and not yet taken by a writer, one per server: the latest."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamps: dict[str, Stamp] = {}

    def put(self, stamps: list[Stamp]) -> list[str]:
        """Keep ``stamps``; the servers that had none waiting (a writer job must take theirs)."""
        fresh: list[str] = []
        with self._lock:
            for stamp in stamps:
                earlier = self._stamps.get(stamp.identifier)
                if earlier is None:
                    fresh.append(stamp.identifier)
                if earlier is None or stamp.now >= earlier.now:
                    self._stamps[stamp.identifier] = stamp
        return fresh

    def take(self, identifiers: list[str]) -> list[Stamp]:
        with self._lock:
            return [stamp for name in identifiers if (stamp := self._stamps.pop(name, None))]


_waiting = _Waiting()


def _forked() -> None:
    # A child has none of its parent's writer jobs: a stamp waiting for one would wait forever.
    global _waiting
    _waiting = _Waiting()


os.register_at_fork(after_in_child=_forked)
