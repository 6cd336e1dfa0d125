"""A fork while another thread holds one of the client's process-wide locks (gunicorn
``--preload``, a task runner's prefork) must not hang the child (issue 25, item 12).

Each test holds a lock on a thread of its own, forks, and has the child use what the lock
guards; the child reports through its exit status, and a child still running after a generous
bound is a hang (it is killed, and the test fails).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nr_llm.mcp.oauth.store import MemoryGrantStore, ServerLocks
from nr_llm.mcp.protocol.eras import cache_key, process_cache
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.hostgate import ANSWERS, resolve

CHILD_SECONDS = 10.0


@contextmanager
def _held(lock: Any) -> Iterator[None]:
    """``lock`` held by another thread until the block ends (as by an operation in progress)."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join(5)


def _child_finishes(work: Callable[[], bool]) -> bool:
    """Fork; the child runs ``work`` and exits 0 if it returned True. False if the child hung."""
    with warnings.catch_warnings():
        # Python 3.12 warns about fork() in a process with threads: that is this test's point.
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        status = 1
        try:
            status = 0 if work() else 2
        finally:
            os._exit(status)
    ends = time.monotonic() + CHILD_SECONDS
    while time.monotonic() < ends:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    return False


def test_the_era_cache_works_in_a_child_forked_while_its_lock_was_held() -> None:
    """The child gets a new lock and keeps the verdicts (they describe servers, not the process)."""
    cache = process_cache()
    key = cache_key("https://mcp.example.com/mcp")
    cache.remember(key, "modern", "2026-07-28", 60, time.monotonic_ns())

    def use() -> bool:
        verdict = cache.get(key, time.monotonic_ns())
        cache.forget(key)
        return verdict is not None and verdict.era == "modern"

    with _held(cache._lock):
        assert _child_finishes(use)


def test_remembered_host_lookups_work_in_a_child_forked_while_their_lock_was_held() -> None:
    """The child looks the host up again (its parent's answers are forgotten) instead of hanging."""
    lookups: list[str] = []

    def lookup(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["93.184.216.34"]

    resolve("https://mcp.example.com/mcp", "x", 5, lookup, remember_seconds=60)

    def use() -> bool:
        found = resolve("https://mcp.example.com/mcp", "x", 5, lookup, remember_seconds=60)
        return found == ["93.184.216.34"] and len(lookups) == 2

    with _held(ANSWERS._lock):
        assert _child_finishes(use)


def test_refresh_locks_work_in_a_child_forked_while_they_were_held() -> None:
    """A renewal's lock (and the map's guard) held by a parent's thread: the child takes its own
    at once, since no renewal of the parent's runs in the child."""
    store = MemoryGrantStore()
    locks: ServerLocks = store._locks

    def use() -> bool:
        with store.exclusive("demo", OperationDeadline(2, MonotonicClock(), "demo")):
            return True

    with store.exclusive("demo", OperationDeadline(30, MonotonicClock(), "demo")), _held(locks._guard):
        assert _child_finishes(use)
