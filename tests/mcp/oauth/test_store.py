"""The store owns the single flight of a refresh: one lock per server, waited for within the budget."""

from __future__ import annotations

import threading
import time

import pytest

from nr_llm.mcp.oauth.store import ServerLocks
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import McpTransportError


def _deadline(budget: float) -> OperationDeadline:
    return OperationDeadline(budget, MonotonicClock(), "demo")


def test_the_lock_map_holds_only_the_servers_in_use() -> None:
    """A thousand operations on a thousand servers leave nothing behind; a held lock is one entry."""
    locks = ServerLocks()
    for n in range(1000):
        with locks.holding(f"server-{n}", _deadline(5), "demo"):
            pass
    assert len(locks) == 0
    with locks.holding("busy", _deadline(5), "demo"):
        assert len(locks) == 1
    assert len(locks) == 0


def test_one_server_s_lock_is_shared_by_every_caller_and_other_servers_are_free() -> None:
    """While one caller holds server A, another waits for A but takes B at once."""
    locks = ServerLocks()
    with locks.holding("a", _deadline(5), "demo"):
        # Waiting for A's lock (held until this block ends) would end at the deadline, raising.
        with locks.holding("b", _deadline(5), "demo"):
            pass
        with pytest.raises(McpTransportError) as caught, locks.holding("a", _deadline(1.5), "demo"):
            pass
    assert caught.value.kind == "deadline_exhausted"


def test_a_lock_held_past_the_budget_ends_deadline_exhausted_within_the_budget() -> None:
    """Held by another thread for longer than the operation may wait: deadline_exhausted once one
    leg's time is left (budget − 1 s), never later than budget + 1 s; the message says why."""
    locks = ServerLocks()
    held, release = threading.Event(), threading.Event()

    def other() -> None:
        with locks.holding("demo", _deadline(60), "demo"):
            held.set()
            release.wait(30)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert held.wait(10)
        started = time.monotonic()
        with pytest.raises(McpTransportError) as caught, locks.holding("demo", _deadline(3), "demo"):
            pass
        waited = time.monotonic() - started
    finally:
        release.set()
        thread.join(10)
    assert caught.value.kind == "deadline_exhausted"
    assert 1.5 < waited < 4.0, waited
    assert "budget of 3 s was spent waiting for another operation's renewal" in str(caught.value)


def test_the_wait_starts_the_operation_s_clock() -> None:
    """A wait before any leg is spent from the budget: the deadline's clock runs from it."""
    deadline = _deadline(5)
    locks = ServerLocks()
    with locks.holding("demo", deadline, "demo"):
        pass
    time.sleep(0.2)
    assert deadline.remaining_ns() < 4.9 * 1e9
