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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, wait
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from ..mcp.protocol.endpoint import Endpoint
from ..models import McpServer
from ..own_transaction import hand_over

logger = logging.getLogger("nr_llm.health")


class HealthRecorder:
    """The client's health sink: one UPDATE of two columns per successful operation.

    ``now`` is the wall-clock seam (a stamp is a point in time an operator reads, not
    a duration), injected so tests pin it instead of sleeping.
    """

    def __init__(self, now: Callable[[], datetime] = timezone.now) -> None:
        self._now = now

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        identifier = endpoint.identifier
        changes = {"last_contact": self._now(), "last_latency_ms": max(0, int(latency_ms))}

        def stamp() -> None:
            rows = McpServer.objects.filter(identifier=identifier)
            if connection.features.has_select_for_update_skip_locked:
                rows = McpServer.objects.filter(pk__in=rows.select_for_update(skip_locked=True).values("pk"))
            # QuerySet.update() leaves `updated` (auto_now) and the import fields alone:
            # a contact is not an edit, and must not hide when an operator last changed the row.
            rows.update(**changes)

        if connection.in_atomic_block:
            try:
                # A savepoint: a failing write must not leave the caller's transaction aborted.
                with transaction.atomic():
                    stamp()
            except Exception:
                _swallowed(identifier)
            return
        done = hand_over(stamp)
        done.add_done_callback(lambda finished: _report(finished, identifier))
        if connection.vendor == "sqlite":
            # One write at a time: a caller's next write must not meet its own stamp holding
            # the lock (an in-memory database refuses at once instead of waiting).
            wait([done])


def _report(done: Future[object], identifier: str) -> None:
    exc = done.exception()
    if exc is not None:
        # A reporting boundary: the operation already has its answer, and a bookkeeping
        # failure must never turn that into an error.
        logger.warning("could not record contact with MCP server %s", identifier, exc_info=exc)


def _swallowed(identifier: str) -> None:
    logger.warning("could not record contact with MCP server %s", identifier, exc_info=True)
