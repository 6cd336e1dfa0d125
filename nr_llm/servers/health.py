"""Write a contact stamp (see the glossary) after each successful operation, so an operator can
tell a live server with a failing tool from a dead one. How stamps reach the database without
costing the caller time: docs/internals.md, "The ledger's write path".
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
    """One UPDATE of the two contact columns, leaving ``updated`` alone: a contact is not an edit,
    and must not hide when an operator last changed the row."""

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
        """Skip a row another transaction holds; the next operation stamps again. Raw SQL because
        the ORM refuses ``select_for_update`` in autocommit; NO KEY, so a running call's foreign
        key check on this row is not held back."""
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
            # The operation already has its answer; bookkeeping must not turn it into an error.
            logger.warning("could not record contact with MCP server %s", self.identifier, exc_info=True)


def _column(name: str) -> Field[Any, Any]:
    field = McpServer._meta.get_field(name)
    assert isinstance(field, Field)
    return field


#: The stamps of the operations the current caller carries into its own next write.
_carrier: ContextVar[list[Stamp] | None] = ContextVar("nr_llm_health_carrier", default=None)


class HealthRecorder:
    """``now`` is a wall clock (an operator reads a point in time), injected so tests pin it."""

    def __init__(self, now: Callable[[], datetime] = timezone.now) -> None:
        self._now = now

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        stamp = Stamp(endpoint.identifier, self._now(), latency_ms)
        if connection.in_atomic_block:
            stamp()  # the row may be the caller's own uncommitted one
            return
        carried_by = _carrier.get()
        if carried_by is not None:
            carried_by.append(stamp)
            return
        write([stamp])


@contextmanager
def carried() -> Iterator[list[Stamp]]:
    """Collect the stamps of the operations inside, for the caller's next write to carry."""
    stamps: list[Stamp] = []
    token = _carrier.set(stamps)
    try:
        yield stamps
    finally:
        _carrier.reset(token)


def rides_along() -> bool:
    """On SQLite carried stamps go in the caller's next ledger write: one commit for both."""
    return connection.vendor == "sqlite"


def write(stamps: list[Stamp]) -> None:
    """Hand ``stamps`` to the writer threads, as a recorder does when nothing carries them."""
    if not stamps:
        return
    if connection.vendor == "sqlite":
        # Wait: the caller's next write must not meet its own stamp holding SQLite's one lock.
        wait([hand_over(lambda: _each(stamps))])
        return
    identifiers = _waiting.put(stamps)
    if identifiers:
        try:
            # Autocommit: one round trip, not five (BEGIN, SAVEPOINT, UPDATE, RELEASE, COMMIT).
            hand_over(lambda: _each(_waiting.take(identifiers)), each_statement=True)
        except Exception:
            # Taken back, so the server's next stamp does not wait behind them.
            _waiting.take(identifiers)
            logger.warning(
                "could not hand over the contact stamps of %s", ", ".join(identifiers), exc_info=True
            )


#: How long an operator's own action (a connection test) waits for its stamp to be written.
SHOWN_WAIT_SECONDS = 5.0


def write_shown(stamps: list[Stamp]) -> None:
    """Wait, within a bound, so the admin page shown next does not say "never"."""
    if stamps:
        wait([hand_over(lambda: _each(stamps))], timeout=SHOWN_WAIT_SECONDS)


def _each(stamps: list[Stamp]) -> None:
    for stamp in stamps:
        stamp()


class _Waiting:
    """One waiting stamp per server, the latest, however many calls it answers at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamps: dict[str, Stamp] = {}

    def put(self, stamps: list[Stamp]) -> list[str]:
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
