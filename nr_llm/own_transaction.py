"""Run database work in a transaction of its own, committed durably whatever the caller then does.

A caller with no transaction open runs the work in place, on its own connection, in
``atomic(durable=True)``: a transaction of its own that no later rollback of the caller's can
reach, with no thread and no connection of its own. A caller inside a transaction
(``ATOMIC_REQUESTS``, an ``atomic`` block) hands the work to a writer thread, whose connection
commits on its own; the caller waits for the commit. Either way every statement goes through
Django's cursor (the query log, ``execute_wrapper``, APM see it) and commits at the site's own
durability. Used for what must outlive the caller's transaction: a rotated refresh token, a
tool-call ledger row, a server's health stamp.

Threads the package starts (``Workers``: the writers here, the tool-call pool) use connections
as a request does: ``close_old_connections()`` before and after each job, so ``CONN_MAX_AGE``,
``CONN_HEALTH_CHECKS`` and Django's connection pool decide what is kept (with the default
``CONN_MAX_AGE = 0``, and always with the pool, the connection goes back after every job); an
idle thread wakes when its connection outlives ``CONN_MAX_AGE`` and lets it go. A connection
found dead when the work starts (a database restart, a failover, a proxy's idle cut) is closed
and the work runs once more on a fresh one.

SQLite allows one writer at a time: while the calling thread holds a write transaction, a
second connection cannot write. ``caller_blocks_own_transaction()`` tells a caller that case
before it tries; the process's SQLite writes take one lock (``_sqlite_writes``), so they meet
each other there, never on the database's lock.
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

#: Writer threads (and so extra database connections) per process at most; one on SQLite,
#: which takes one writer at a time anyway.
WRITERS = 4
#: How long a process that exits waits for the writes it handed over and did not wait for.
EXIT_GRACE_SECONDS = 2.0
_SQLITE_BUSY_OR_LOCKED = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes share the low byte)
_sqlite_writes = threading.RLock()
_IDLE_NAME = "nr-llm-writer"

_Job = tuple[Callable[[], Any], "Future[Any]", str]


def idle_seconds() -> float | None:
    """How long a thread's idle connection may live: the site's ``CONN_MAX_AGE`` (None: as long
    as the site lets it; 0: it was closed after the job already)."""
    age = connections["default"].settings_dict.get("CONN_MAX_AGE", 0)
    return None if age is None or age == 0 else float(age)


class Workers:
    """A queue and up to ``limit()`` threads that run its jobs, each job a unit of work with its
    connection recycled around it as Django's request signals recycle a request's."""

    def __init__(self, name: str, limit: Callable[[], int], run: Callable[[Callable[[], Any]], Any]) -> None:
        self._name = name
        self._limit = limit
        self._run = run
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._threads: list[threading.Thread] = []
        #: Jobs handed over and not yet ended (running or queued).
        self._pending = 0
        self._settled = threading.Condition(self._guard)

    def submit(self, work: Callable[[], T], name: str = "") -> Future[T]:
        done: Future[T] = Future()
        with self._guard:
            self._pending += 1
            # A thread is started only when every one is busy: the count grows with the work
            # in flight at once, never with the number of jobs.
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
        """How many of the threads hold a database connection now (tests, bench)."""
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
        """Drop the queued jobs (their futures cancelled: they never start) and wait up to
        ``grace`` for the running ones; (running, dropped, still running after the grace)."""
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
                    # Idle past CONN_MAX_AGE: the connection is let go, as a request's would be.
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
    """``work`` in a durable transaction of its own on this thread's connection (autocommit
    instead, each statement committing on its own, where ``each_statement`` allows it outside
    SQLite); a connection found dead closed and the work run once more on a fresh one."""
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
            # Dead: Django dropped the connection the work ran on (and may have opened the next
            # one already, to restore autocommit), or the one left cannot answer.
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
    # A child does not inherit the parent's threads, only their bookkeeping, and a lock one of
    # them held at the fork would stay held in the child for good.
    global _writers, _sqlite_writes
    _writers = Workers(_IDLE_NAME, lambda: 1 if connection.vendor == "sqlite" else WRITERS, _call)
    _sqlite_writes = threading.RLock()


os.register_at_fork(after_in_child=_forked)


@atexit.register
def _settle_at_exit() -> None:
    # Writes handed over and not waited for (a health stamp) would die with the daemon writer
    # threads: a command that exits right after its call still gets them written, within a grace.
    _writers.settle(EXIT_GRACE_SECONDS)


def sqlite_refused(exc: BaseException) -> bool:
    """SQLite refused a write at once because another connection holds its lock, or (WAL) has
    committed since this connection's open read began: a busy timeout never waited for it."""
    code = getattr(exc.__cause__, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SQLITE_BUSY_OR_LOCKED


#: A deadlock's codes: MySQL/MariaDB's error number, PostgreSQL's SQLSTATE (psycopg 3 and 2 name
#: it differently). The database rolled the transaction back whole and asks for it again.
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
    """Run ``work`` in a transaction committed durably on its own; its result is returned only
    once committed, and its exception (a failed commit's included) is raised here.

    In place when the caller has no transaction open; else on a writer thread named ``name``.
    ``each_statement``: the work's statements need no transaction around them (each a
    conditional write standing on its own), so outside SQLite they run in autocommit, each
    committed durably as it runs: one round trip per statement instead of three (BEGIN, the
    statement, COMMIT). SQLite keeps one transaction: one sync of the disk for all of them.
    """
    if _in_place():
        try:
            return _committed(work, each_statement)
        except DatabaseError as exc:
            if not (connection.vendor == "sqlite" and sqlite_refused(exc)):
                raise
            # The caller's own connection cannot write now: a read it left open (a
            # QuerySet.iterator()) keeps, in WAL mode, a snapshot another connection's commit
            # has since made stale. A writer's connection has no such read.
    return _writers.submit(functools.partial(_committed, work, each_statement), name).result()


def _in_place() -> bool:
    """The calling thread's connection is in autocommit, in no transaction."""
    if connection.in_atomic_block:
        return False
    try:
        return connection.get_autocommit()
    except DatabaseError:
        return True  # no connection now: ``_committed`` opens one, or says why it cannot


def hand_over(work: Callable[[], object], *, each_statement: bool = False) -> Future[object]:
    """Run ``work`` in a transaction of its own without waiting for it (a bookkeeping write
    whose outcome the caller does not need); the returned future says how it ended.
    ``each_statement`` as for ``run_in_own_transaction``."""
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
    """True when the calling thread's open transaction keeps another connection from writing.

    Only SQLite's single writer makes it so; elsewhere two transactions write side by side.
    """
    return connection.vendor == "sqlite" and connection.in_atomic_block
