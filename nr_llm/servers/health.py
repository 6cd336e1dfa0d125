"""Liveness is observed, not inferred (ADR-154): stamp each successful operation.

An operator reading "last contact 2 minutes ago" next to a failing tool knows the
server answers and the tool is the problem; so only a completed operation may stamp,
and the stamp must never cost the caller its answer, nor its time.

The stamp is handed to the writer threads (``nr_llm.own_transaction``) and not waited for: it
runs on their connection, never on the caller's, and on PostgreSQL skips a row another
transaction holds (``FOR UPDATE SKIP LOCKED``): a call that already has its answer never waits
on someone else's lock, and the next operation stamps again. On SQLite, whose one write lock
the writer thread takes for stamps and ledger rows alike, the caller waits for its stamp (no
row lock to wait on there), so its own next write never meets it. A caller inside a
transaction of its own (``ATOMIC_REQUESTS``, an ``atomic`` block) keeps the stamp in a
savepoint of it: the server row may be the caller's own uncommitted one, which another
connection would not see, and on SQLite the caller holds the one write lock; there too a
locked row is skipped.

A caller that writes anyway right after the operation (a tool call's ledger outcome) carries
the stamp in that write (``carried()``): one writer job and, on SQLite, one commit instead of
two. The stamp is one statement that skips a locked row there too. On PostgreSQL a caller with
no transaction open writes its outcome on its own connection, in autocommit
(``own_transaction.relaxed``), and the stamp rides in that statement: on the caller's
connection then, but in no transaction of the caller's, and still never waiting for a lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import wait
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from ..governance import statements
from ..mcp.protocol.endpoint import Endpoint
from ..models import McpServer
from ..own_transaction import hand_over, relaxed

logger = logging.getLogger("nr_llm.health")


class Stamp:
    """One server's contact: one UPDATE of its two contact columns (``update``, for a write
    that carries it in its own statement), or run on its own (called), swallowing its failure.
    Like ``QuerySet.update()`` it leaves ``updated`` (auto_now) and the import fields alone: a
    contact is not an edit, and must not hide when an operator last changed the row."""

    def __init__(self, identifier: str, now: datetime, latency_ms: int) -> None:
        self.identifier = identifier
        self.update = statements.Update(
            McpServer,
            {"last_contact": now, "last_latency_ms": max(0, int(latency_ms))},
            {"identifier": identifier},
            skip_locked=connection.features.has_select_for_update_skip_locked,
        )

    def __call__(self) -> None:
        try:
            if connection.in_atomic_block:
                # A savepoint: a failing write must not leave the transaction it rides in aborted.
                with transaction.atomic():
                    statements.run(self.update)
            else:
                statements.run(self.update)  # autocommit (a relaxed write on PostgreSQL)
        except Exception:
            # A reporting boundary: the operation already has its answer, and a bookkeeping
            # failure must never turn that into an error.
            logger.warning("could not record contact with MCP server %s", self.identifier, exc_info=True)


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


def write(stamps: list[Stamp]) -> None:
    """Hand ``stamps`` to the writer threads, as a recorder does when nothing carries them."""
    if not stamps:
        return

    def run() -> None:
        for stamp in stamps:
            stamp()

    # A stamp is not worth a wait for the disk: if a database server's crash loses it, the
    # next operation stamps again.
    done = hand_over(relaxed(run))
    if connection.vendor == "sqlite":
        # One write at a time: a caller's next write must not meet its own stamp holding
        # the lock (an in-memory database refuses at once instead of waiting).
        wait([done])
