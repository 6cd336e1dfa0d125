"""Run database work in a transaction of its own, committed whatever the caller then does.

Django gives each thread its own connection, so the work runs on a writer thread: its
transaction commits (or rolls back) on its own, and a caller's later rollback (an ``atomic``
block around a tool call, ``ATOMIC_REQUESTS``) cannot take it back. Used for what must
outlive the caller's transaction: a rotated refresh token, a tool-call ledger row, a
server's health stamp.

The writers are few and kept: at most ``WRITERS`` threads per process, started on first use,
each holding its database connection open between writes (checked after an idle spell). A
write costs a hand-over to a waiting thread and the statement itself: no thread is started
and no connection opened per write, and the process never holds more than ``WRITERS``
extra connections (one on SQLite), however many requests write at once. ``close_writers()`` lets go of them
(a test database about to be dropped); a forked child starts its own.

A tool call's own rows need not even the hand-over: written (``relaxed``) by a caller with no
transaction open, they run on the caller's own connection, where no rollback of the caller's can
reach them either: on PostgreSQL as one autocommit statement, on SQLite in a transaction of
their own, taking the process's SQLite write lock (``_sqlite_writes``) as the writer thread
does, so they meet each other there, never on the database's one lock.

SQLite allows one writer at a time: while the calling thread holds a write transaction, a
second connection cannot write (in tests, whose shared in-memory database answers "database
table is locked" at once) or waits for a lock its own caller will never release.
``caller_blocks_own_transaction()`` tells a caller that case before it tries.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from django.db import DatabaseError, connection, transaction

T = TypeVar("T")

#: Writer threads (and so extra database connections) per process at most; one on SQLite,
#: which takes one writer at a time anyway (more would only queue on, or trip over, its lock).
WRITERS = 4
#: A connection idle this long is checked (one round trip) before it is trusted again: a
#: server or a proxy may have closed it meanwhile.
IDLE_CHECK_SECONDS = 30.0

_Job = tuple[Callable[[], Any], "Future[Any]", str]
#: How long a process that exits waits for the writes it handed over and did not wait for.
EXIT_GRACE_SECONDS = 2.0
_SQLITE_BUSY_OR_LOCKED = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED (extended codes share the low byte)
#: One SQLite write in this process at a time, the writer thread's or one done in place: two
#: would meet on the database's lock instead, which a busy handler waits out in sleeps of
#: milliseconds and a shared in-memory database refuses at once ("table is locked").
_sqlite_writes = threading.RLock()
_IDLE_NAME = "nr-llm-writer"


class _Writers:
    """A queue and up to ``WRITERS`` threads that run its jobs, each in one transaction."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._guard = threading.Lock()
        self._threads: list[threading.Thread] = []
        #: Jobs handed over and not yet ended (running or queued).
        self._pending = 0
        self._settled = threading.Condition(self._guard)

    def submit(self, work: Callable[[], T], name: str = _IDLE_NAME) -> Future[T]:
        done: Future[T] = Future()
        with self._guard:
            self._pending += 1
            # A thread is started only when every one is busy: the count grows with the
            # writes in flight at once, never with the number of writes.
            limit = 1 if connection.vendor == "sqlite" else WRITERS
            if self._pending > len(self._threads) and len(self._threads) < limit:
                thread = threading.Thread(target=self._serve, name=_IDLE_NAME, daemon=True)
                self._threads.append(thread)
                thread.start()
        self._jobs.put((work, done, name))
        return done

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every job handed over so far has ended; False if ``timeout`` passed first."""
        with self._settled:
            return self._settled.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        """Stop the threads; each closes its connection first. The next write starts anew."""
        with self._guard:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join(timeout=10.0)

    def _serve(self) -> None:
        last = time.monotonic()
        try:
            while (job := self._jobs.get()) is not None:
                work, done, name = job
                # Named for the work while it runs (a debugger's thread list, a log's threadName).
                threading.current_thread().name = name
                if time.monotonic() - last > IDLE_CHECK_SECONDS:
                    _drop_if_unusable()
                try:
                    value = _run(work)
                except BaseException as exc:  # handed to the caller, raised there
                    if isinstance(exc, DatabaseError):
                        _drop_if_unusable()
                    done.set_exception(exc)
                else:
                    done.set_result(value)
                last = time.monotonic()
                threading.current_thread().name = _IDLE_NAME
                with self._settled:
                    self._pending -= 1
                    self._settled.notify_all()
        finally:
            connection.close()


def _run(work: Callable[[], T]) -> T:
    if connection.vendor == "postgresql" and getattr(work, "relaxed_commit", False):
        # One statement in autocommit, its commit not waiting for the disk (``relaxed``).
        return _relaxing(work)
    if connection.vendor == "sqlite":
        with _sqlite_writes, transaction.atomic():
            return work()
    with transaction.atomic():
        return work()


#: Set while a relaxed write runs: its statements end in ``relaxed_clause()``.
_relaxed: ContextVar[bool] = ContextVar("nr_llm_relaxed_commit", default=False)


def _relaxing(work: Callable[[], T]) -> T:
    token = _relaxed.set(True)
    try:
        return work()
    finally:
        _relaxed.reset(token)


def relaxed_clause() -> str:
    """What a statement of a relaxed write ends with on PostgreSQL, else "".

    ``set_config(..., true)`` in the statement's ``RETURNING`` list sets ``synchronous_commit``
    for the statement's own (autocommit) transaction only, before it commits: one round trip,
    and the session keeps its setting (the caller's own connection may run it). A statement
    that changes no row does not evaluate it, and has nothing of its own to wait for.
    """
    if _relaxed.get() and connection.vendor == "postgresql":
        return " RETURNING set_config('synchronous_commit', 'off', true)"
    return ""


def _drop_if_unusable() -> None:
    # The next statement opens a fresh connection instead of failing on a dead one.
    if connection.connection is not None and not connection.is_usable():
        connection.close()


_writers = _Writers()


def _forked() -> None:
    # A child does not inherit the parent's threads, only their bookkeeping, and a lock one of
    # them held at the fork would stay held in the child for good.
    global _writers, _sqlite_writes
    _writers = _Writers()
    _sqlite_writes = threading.RLock()


os.register_at_fork(after_in_child=_forked)


@atexit.register
def _settle_at_exit() -> None:
    # Writes handed over and not waited for (a health stamp) would die with the daemon writer
    # threads: a command or a worker that exits right after its call still gets them written,
    # within a short grace.
    _writers.settle(EXIT_GRACE_SECONDS)


def sqlite_refused(exc: BaseException) -> bool:
    """SQLite refused a write at once because another connection holds its lock, or (WAL) has
    committed since this connection's open read began: a busy timeout never waited for it."""
    code = getattr(exc.__cause__, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in _SQLITE_BUSY_OR_LOCKED


class relaxed(Generic[T]):
    """``work`` of ONE statement whose commit need not wait for the disk (PostgreSQL's
    ``synchronous_commit`` off, ``relaxed_clause``): run in autocommit, one round trip, visible
    to every session and safe from a caller's rollback at once, durable a fraction of a second
    later. Only what a database server's crash may lose without harm: never a state move another
    decision relies on (an approval, a claim). Elsewhere (SQLite) it is an ordinary transaction
    (statements after the first, a health stamp riding along, each in a savepoint swallowing its
    own failure).

    A caller with no transaction open runs it on its own connection (``run_in_own_transaction``):
    an autocommit statement (PostgreSQL) or a transaction begun and committed there (SQLite) is
    one no later rollback of the caller's can reach, so no hand-over to a writer thread is
    needed, nor its wake-ups."""

    relaxed_commit = True

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work

    def __call__(self) -> T:
        return self._work()


def run_in_own_transaction(work: Callable[[], T], *, name: str = "nr-llm-own-transaction") -> T:
    """Run ``work`` in a transaction committed on its own; its result is returned only once
    committed, and its exception (a failed commit's included) is raised here.

    ``name`` says what the work is for: the writer thread bears it while the work runs.
    ``relaxed`` work of a caller with no transaction open runs here (``relaxed``).
    """
    if getattr(work, "relaxed_commit", False) and _in_place():
        if connection.vendor == "sqlite":
            try:
                return _run(work)  # as a writer runs it: its own transaction, the process's lock
            except DatabaseError as exc:
                if not sqlite_refused(exc):
                    raise
                # The caller's own connection cannot write now: a read it left open (a
                # QuerySet.iterator()) keeps, in WAL mode, a snapshot that another connection's
                # commit has since made stale. A writer's connection has no such read.
                return _writers.submit(work, name).result()
        try:
            return _relaxing(work)
        except DatabaseError:
            if connection.is_usable():
                raise  # the statement's own failure: a writer would meet it too
            # A connection the server closed meanwhile: dropped (the caller's next query opens
            # a fresh one), and the write goes to a writer, whose connection is checked.
            connection.close()
    return _writers.submit(work, name).result()


def in_place_relaxed(send: Callable[[], T]) -> T | None:
    """``send`` run as relaxed work on the caller's own PostgreSQL connection, where such work
    runs in place (``run_in_own_transaction``: autocommit, no transaction open); None elsewhere.
    For a statement sent now whose answer is read later (``governance.ahead``)."""
    if connection.vendor != "postgresql" or not _in_place():
        return None
    return _relaxing(send)


def _in_place() -> bool:
    """The calling thread's connection is PostgreSQL's or SQLite's, in autocommit, in no
    transaction."""
    if connection.vendor not in ("postgresql", "sqlite") or connection.in_atomic_block:
        return False
    try:
        return connection.get_autocommit()
    except DatabaseError:
        return False  # no connection to be had here now: a writer may have one


def hand_over(work: Callable[[], object]) -> Future[object]:
    """Run ``work`` in a transaction of its own without waiting for it (a bookkeeping write
    whose outcome the caller does not need); the returned future says how it ended."""
    return _writers.submit(work, "nr-llm-hand-over")


def settle(timeout: float = 10.0) -> bool:
    """Wait for the writes handed over so far (a test reading what ``hand_over`` wrote)."""
    return _writers.settle(timeout)


def close_writers() -> None:
    """Stop the writer threads and close their connections (before a test database is dropped)."""
    _writers.close()


def caller_blocks_own_transaction() -> bool:
    """True when the calling thread's open transaction keeps another connection from writing.

    Only SQLite's single writer makes it so; on PostgreSQL two transactions write side by side.
    """
    return connection.vendor == "sqlite" and connection.in_atomic_block
