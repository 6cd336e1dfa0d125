"""Run database work in a transaction of its own, committed durably whatever the caller then does:
for what must outlive the caller's transaction (a rotated refresh token, a ledger row, a contact
stamp). How, and how the threads treat connections: docs/internals.md, "The ledger's write path".
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from django.db import DatabaseError, close_old_connections, connection, connections, transaction

T = TypeVar("T")
logger = logging.getLogger("nr_llm.ledger")

#: Each is a database connection; one on SQLite, which takes one writer at a time anyway.
WRITERS = 4
EXIT_GRACE_SECONDS = 2.0
_SQLITE_BUSY_OR_LOCKED = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes share the low byte)
_sqlite_writes = threading.RLock()
_IDLE_NAME = "nr-llm-writer"

_Job = tuple[Callable[[], Any], "Future[Any]", str]


def idle_seconds() -> float | None:
    """The site's ``CONN_MAX_AGE``, or None when it is 0 (closed after each job) or unbounded."""
    age = connections["default"].settings_dict.get("CONN_MAX_AGE", 0)
    return None if age is None or age == 0 else float(age)


class Workers:
    """Threads whose connection is recycled around each job, as Django recycles a request's."""

    def __init__(self, name: str, limit: Callable[[], int], run: Callable[[Callable[[], Any]], Any]) -> None:
        self._name = name
        self._limit = limit
        self._run = run
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._pending = 0
        self._settled = threading.Condition(self._guard)

    def submit(self, work: Callable[[], T], name: str = "") -> Future[T]:
        done: Future[T] = Future()
        with self._guard:
            self._pending += 1
            # Threads grow with the work in flight at once, not with the number of jobs.
            if self._pending > len(self._threads) and len(self._threads) < self._limit():
                thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
                self._threads.append(thread)
                thread.start()
        self._jobs.put((work, done, name or self._name))
        return done

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every job handed over so far has ended; False if ``timeout`` passed first."""
        with self._settled:
            return self._settled.wait_for(lambda: self._pending == 0, timeout)

    def connected(self) -> int:
        return sum(1 for thread in self._threads if getattr(thread, "nr_llm_connected", False))

    def close(self) -> None:
        """Stop the threads; each closes its connection first. The next job starts anew."""
        with self._guard:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join(timeout=10.0)

    def stop(self, grace: float) -> tuple[int, int, int]:
        """Drop the queued jobs and wait for the running; (running, dropped, still running)."""
        dropped = 0
        sentinels = 0
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None:
                sentinels += 1
                continue
            if job[1].cancel():
                dropped += 1
            with self._settled:
                self._pending -= 1
                self._settled.notify_all()
        for _ in range(sentinels):
            self._jobs.put(None)
        with self._guard:
            running = self._pending
        self.settle(grace)
        with self._guard:
            return running, dropped, self._pending

    def _serve(self) -> None:
        me = threading.current_thread()
        try:
            while True:
                try:
                    job = self._jobs.get(timeout=idle_seconds())
                except queue.Empty:
                    close_old_connections()
                    me.nr_llm_connected = connection.connection is not None  # type: ignore[attr-defined]
                    continue
                if job is None:
                    return
                work, done, name = job
                me.name = name  # a debugger's thread list, a log's threadName
                try:
                    if not done.set_running_or_notify_cancel():
                        continue  # cancelled before it started: it never starts
                    close_old_connections()
                    value = self._run(work)
                except BaseException as exc:  # handed to the caller, raised there
                    done.set_exception(exc)
                else:
                    done.set_result(value)
                finally:
                    close_old_connections()
                    me.nr_llm_connected = connection.connection is not None  # type: ignore[attr-defined]
                    me.name = self._name
                    with self._settled:
                        self._pending -= 1
                        self._settled.notify_all()
        finally:
            connection.close()


def _committed(work: Callable[[], T], each_statement: bool = False) -> T:
    """Run once more on a fresh connection when the first was found dead."""
    for attempt in (1, 2):
        raw = None
        try:
            connection.ensure_connection()  # with CONN_HEALTH_CHECKS, checked first
            raw = connection.connection
            if connection.vendor == "sqlite":
                with _sqlite_writes, transaction.atomic(durable=True):
                    return work()
            if each_statement and connection.get_autocommit():
                return work()
            with transaction.atomic(durable=True):
                return work()
        except DatabaseError:
            # Django may already have replaced the dropped connection, to restore autocommit.
            dead = raw is None or connection.connection is not raw or not _usable()
            if attempt == 2 or connection.in_atomic_block or not dead:
                raise  # the work's own failure: a fresh connection would meet it too
            logger.warning("a database connection was found dead; the write runs again on a new one")
            connection.close()
    raise AssertionError("unreachable")


def _usable() -> bool:
    return connection.connection is not None and connection.is_usable()


def _call(work: Callable[[], T]) -> T:
    return work()


_writers = Workers(_IDLE_NAME, lambda: 1 if connection.vendor == "sqlite" else WRITERS, _call)


def _forked() -> None:
    # A lock a parent's thread held at the fork would stay held in the child for good.
    global _writers, _sqlite_writes
    _writers = Workers(_IDLE_NAME, lambda: 1 if connection.vendor == "sqlite" else WRITERS, _call)
    _sqlite_writes = threading.RLock()


os.register_at_fork(after_in_child=_forked)


@atexit.register
def _settle_at_exit() -> None:
    # Writes nobody waited for (a contact stamp) would die with the daemon threads.
    _writers.settle(EXIT_GRACE_SECONDS)


def sqlite_refused(exc: BaseException) -> bool:
    """SQLite refused at once: a busy timeout does not wait for a stale WAL snapshot."""
    code = getattr(exc.__cause__, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SQLITE_BUSY_OR_LOCKED


_MYSQL_DEADLOCK = 1213
_POSTGRESQL_DEADLOCK = "40P01"


def deadlocked(exc: BaseException) -> bool:
    """The database chose this transaction as a deadlock's victim and rolled it back."""
    cause = exc.__cause__
    if cause is None:
        return False
    if getattr(cause, "args", (None,))[:1] == (_MYSQL_DEADLOCK,):
        return True
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code == _POSTGRESQL_DEADLOCK


def run_in_own_transaction(
    work: Callable[[], T], *, name: str = "nr-llm-own-transaction", each_statement: bool = False
) -> T:
    """Return ``work``'s result once committed, or raise its failure (a failed commit's too).

    ``each_statement``: statements that stand on their own run in autocommit outside SQLite,
    one round trip each instead of three.
    """
    if _in_place():
        try:
            return _committed(work, each_statement)
        except DatabaseError as exc:
            if not (connection.vendor == "sqlite" and sqlite_refused(exc)):
                raise
            # A read the caller left open holds a stale WAL snapshot; a writer's connection has none.
    return _writers.submit(functools.partial(_committed, work, each_statement), name).result()


def _in_place() -> bool:
    if connection.in_atomic_block:
        return False
    try:
        return connection.get_autocommit()
    except DatabaseError:
        return True  # no connection now: ``_committed`` opens one, or says why it cannot


def hand_over(work: Callable[[], object], *, each_statement: bool = False) -> Future[object]:
    """Run ``work`` in a transaction of its own without waiting, for bookkeeping the caller
    does not need the outcome of."""
    return _writers.submit(functools.partial(_committed, work, each_statement), "nr-llm-hand-over")


def settle(timeout: float = 10.0) -> bool:
    """Wait for the writes handed over so far (a test reading what ``hand_over`` wrote)."""
    return _writers.settle(timeout)


def close_writers() -> None:
    """Stop the writer threads and close their connections (before a test database is dropped)."""
    _writers.close()


def writers() -> Workers:
    return _writers


def caller_blocks_own_transaction() -> bool:
    """Only SQLite's single writer lets the caller's open transaction block another's write."""
    return connection.vendor == "sqlite" and connection.in_atomic_block
