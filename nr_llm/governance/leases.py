"""Leases: a server's "calls at once" and a tool's "run alone" across processes and hosts.

A call takes a lease (a ``CallLease`` row) at the one point where it is about to be sent
(``execute``, a turn's call, a resumed call, a task worker's: all pass through
``tools.execution._run_remote``) and gives it back when it ends, on every path. A lease is
granted in a transaction of its own that first locks the server's row (on SQLite, whose
writers take one lock, the first write does), so two processes never both see a free place:

- a server with its own **calls at once** N: at most N leases of it at once;
- a **run alone** call (the tool marked so, or a tool the server does not annotate read-only
  on a server that runs its writes alone): granted only when the server has no other lease,
  and while it holds one no other is granted. So across the site it never runs beside another
  leased call of its server: with calls at once set, or writes run alone, every call of that
  server takes a lease; otherwise only run-alone calls do, and it never runs beside itself or
  another run-alone tool of the server.

Calls of other servers take no lease and cost nothing here. A call waiting for a place asks
again after a short, growing pause, within its budget; what is left of the budget is all its
send may spend, and when it runs out the call ends "could not run", never sent. A lease
expires on the database's clock (its budget and two seconds: a request's under-a-second
overrun and a margin), so a killed process frees its places.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import DatabaseError, connection
from django.db.models import Count, DateTimeField, ExpressionWrapper, Q
from django.db.models.functions import Now

from ..own_transaction import run_in_own_transaction
from .models import CallLease

logger = logging.getLogger("nr_llm.tools")

#: Below this much budget left a call is not sent (wire/deadline.py's MINIMUM_LEG_SECONDS).
MINIMUM_SECONDS = 1.0
#: Beyond the call's budget: a request's overrun (under a second) and a margin.
EXPIRY_MARGIN_SECONDS = 2.0
#: The pause before asking again for a place, growing by half each time up to the last.
FIRST_PAUSE_SECONDS = 0.02
LAST_PAUSE_SECONDS = 0.25
#: The first pause when the server's row was locked by another grant.
BUSY_PAUSE_SECONDS = 0.002


@dataclass
class Lease:
    """A call's place: ``refusal`` says why there is none; ``budget`` is what its send may spend."""

    budget: float
    refusal: str = ""
    pk: int | None = None
    released: bool = field(default=False, repr=False)

    def release(self) -> None:
        """Give the place back (once); a failure is logged: the lease expires on its own."""
        if self.pk is None or self.released:
            return
        self.released = True
        pk = self.pk
        try:
            run_in_own_transaction(
                lambda: CallLease.objects.filter(pk=pk).delete(), name="nr-llm-lease", each_statement=True
            )
        except DatabaseError as exc:
            logger.warning(
                "a call lease was not given back (%s); it expires with its budget", type(exc).__name__
            )


def needed(cap: int | None, alone: bool, writes_alone: bool) -> bool:
    """Whether a call of this server and tool takes a lease at all."""
    return bool(cap) or alone or writes_alone


def take(
    server_pk: int,
    tool_name: str,
    *,
    cap: int | None,
    alone: bool,
    writes_alone: bool,
    budget: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Lease:
    """A lease for a call about to be sent, waiting for a place within ``budget`` seconds."""
    if not needed(cap, alone, writes_alone):
        return Lease(budget)
    started = clock()
    # Two paces: a full server frees a place when a call ends (tens of ms at least); a busy
    # lock when another grant commits (a few ms), so it is asked again sooner.
    pause, busy_pause = FIRST_PAUSE_SECONDS, BUSY_PAUSE_SECONDS
    ever_counted = False  # whether the places were ever counted, not only found locked
    while True:
        left = budget - (clock() - started)
        grant = functools.partial(_granted, server_pk, tool_name, cap or 0, alone, left)
        busy = False
        try:
            pk = run_in_own_transaction(grant, name="nr-llm-lease")
        except DatabaseError as exc:
            if not _lock_busy(exc):
                raise
            pk, busy = None, True  # another grant (or a caller's open transaction) holds the row
        ever_counted = ever_counted or not busy
        left = budget - (clock() - started)
        if pk is not None:
            return Lease(left, pk=pk)
        if left <= MINIMUM_SECONDS:
            return Lease(left, refusal=_refusal(cap, alone, budget, locked=not ever_counted))
        # Jittered, so processes that met at a full server do not ask again in step.
        wait = busy_pause if busy else pause
        sleep(min(wait * random.uniform(0.5, 1.0), left - MINIMUM_SECONDS))
        if busy:
            busy_pause = min(busy_pause * 2, LAST_PAUSE_SECONDS)
        else:
            pause = min(pause * 1.5, LAST_PAUSE_SECONDS)


def _granted(server_pk: int, tool_name: str, cap: int, alone: bool, left: float) -> int | None:
    """In a transaction: the new lease's id, or None when the server has no place for it."""
    from ..servers.models import McpServer

    if connection.vendor != "sqlite":
        # Takers of this server's places meet here (the first write does it on SQLite). Never
        # waiting for the lock: a caller whose open transaction wrote the server's row would
        # wait on this write while it waits for the caller; a busy lock is asked again later.
        rows = McpServer.objects.select_for_update(nowait=True).filter(pk=server_pk)
        list(rows.values_list("pk", flat=True))
    ours = CallLease.objects.filter(server_id=server_pk)
    if connection.vendor == "sqlite":
        ours.filter(expires_at__lte=Now()).delete()
    live = Q(expires_at__gt=Now())
    held = ours.aggregate(
        all=Count("pk", filter=live),
        alone=Count("pk", filter=live & Q(alone=True)),
        past=Count("pk", filter=~live),
    )
    if held["past"]:
        ours.filter(expires_at__lte=Now()).delete()  # their holders died: nobody else deletes them
    if held["alone"] or (alone and held["all"]) or (cap and held["all"] >= cap):
        return None
    expires = ExpressionWrapper(
        Now() + timedelta(seconds=left + EXPIRY_MARGIN_SECONDS), output_field=DateTimeField()
    )
    lease = CallLease.objects.create(
        server_id=server_pk, tool_name=tool_name[:64], alone=alone, expires_at=expires, holder=_holder()
    )
    return lease.pk


#: A row lock taken by another transaction, refused at once (NOWAIT): PostgreSQL's SQLSTATE,
#: MySQL's and MariaDB's error numbers.
_POSTGRESQL_LOCK_NOT_AVAILABLE = "55P03"
_MYSQL_LOCK_NOWAIT = (3572, 1205)


def _lock_busy(exc: BaseException) -> bool:
    cause = exc.__cause__
    if cause is None:
        return False
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if code == _POSTGRESQL_LOCK_NOT_AVAILABLE:
        return True
    return getattr(cause, "args", (None,))[:1] in [(number,) for number in _MYSQL_LOCK_NOWAIT]


def _holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.current_thread().name}"[:200]


def _refusal(cap: int | None, alone: bool, budget: float, *, locked: bool = False) -> str:
    if locked:
        # Never counted: the places may be free, and saying "taken" would send the operator to
        # the wrong setting. The usual holder is the caller's own transaction.
        return (
            f"the server's places could not be counted within its {budget:g} s budget: another "
            "open transaction held the server's row (often the caller's own, which changed this "
            "server); it was not sent. Commit that transaction first, or call it again later"
        )
    held = (
        'a "run alone" call waits until no other call of its server runs'
        if alone
        else f'the server\'s places ("calls at once" {cap or "-"}, or a "run alone" call) were taken'
    )
    return (
        f"no place was free within its {budget:g} s budget ({held}, across this site); it was not "
        "sent. Call it again later"
    )
