"""Run database work in a transaction of its own, committed whatever the caller then does.

Django gives each thread its own connection, so the work runs on a short-lived thread: its
transaction commits (or rolls back) on its own, and a caller's later rollback (an ``atomic``
block around a tool call, ``ATOMIC_REQUESTS``) cannot take it back. Used for what must
outlive the caller's transaction: a rotated refresh token, a tool-call ledger row.

SQLite allows one writer at a time: while the calling thread holds a write transaction, a
second connection cannot write (in tests, whose shared in-memory database answers "database
table is locked" at once) or waits for a lock its own caller will never release.
``caller_blocks_own_transaction()`` tells a caller that case before it tries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from django.db import connection, transaction

T = TypeVar("T")


def run_in_own_transaction(work: Callable[[], T], *, name: str = "nr-llm-own-transaction") -> T:
    """Run ``work`` in a transaction committed on its own; its result is returned only once
    committed, and its exception (a failed commit's included) is raised here."""
    result: Future[T] = Future()

    def run() -> None:
        try:
            with transaction.atomic():
                value = work()
        except BaseException as exc:  # handed to the caller, raised there
            result.set_exception(exc)
        else:
            result.set_result(value)
        finally:
            connection.close()

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    worker.join()
    return result.result()


def caller_blocks_own_transaction() -> bool:
    """True when the calling thread's open transaction keeps another connection from writing.

    Only SQLite's single writer makes it so; on PostgreSQL two transactions write side by side.
    """
    return connection.vendor == "sqlite" and connection.in_atomic_block
