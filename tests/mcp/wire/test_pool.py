"""The idle pool: what it hands out, to whom, for how long (a fake clock; stand-in connections).

The rules with real sockets, servers and TLS are in tests/e2e/test_mcp_pool.py.
"""

from __future__ import annotations

import os
import socket
import warnings

import pytest

from nr_llm.mcp.wire.pool import MAX_IDLE_PER_ORIGIN, IdlePool, Origin

ORIGIN = Origin("https", "mcp.test", 443)
FIT = ("/ca.pem", False)
ADDRESSES = ("192.0.2.1", "192.0.2.2")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Connection:
    """What the pool asks of a urllib3 connection: whether it is still open, and close()."""

    def __init__(self, *, open_: bool = True) -> None:
        self.open = open_
        self.closed = False
        self.sock: object = None

    @property
    def is_connected(self) -> bool:
        return self.open and not self.closed

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pool(clock: Clock) -> IdlePool:
    return IdlePool(clock)


def test_a_kept_connection_serves_one_leg_at_a_time(pool: IdlePool) -> None:
    """take() hands a kept connection out and forgets it: a second leg gets none until it is back."""
    connection = Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", connection, 1.5)
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is connection
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is None
    assert not connection.closed


def test_the_most_recently_kept_connection_is_taken_first(pool: IdlePool) -> None:
    """The newest is the least likely to have been closed by the server."""
    older, newer = Connection(), Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", older, 1.5)
    pool.keep(ORIGIN, FIT, "192.0.2.1", newer, 1.5)
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is newer


def test_a_connection_idle_past_the_limit_is_closed_not_handed_out(pool: IdlePool, clock: Clock) -> None:
    """At the idle limit the connection is dropped (closed), whichever limit is smaller: the one
    it was kept under or the one the taking leg has."""
    first, second = Connection(), Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", first, 1.5)
    clock.now += 1.5
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is None and first.closed
    pool.keep(ORIGIN, FIT, "192.0.2.1", second, 1.5)
    clock.now += 1.0
    assert pool.take(ORIGIN, FIT, ADDRESSES, 0.5) is None and second.closed


def test_a_connection_the_server_closed_is_dropped_before_reuse(pool: IdlePool) -> None:
    """The check before reuse: a socket that reads as closed is closed here, never handed out."""
    closed = Connection(open_=False)
    pool.keep(ORIGIN, FIT, "192.0.2.1", closed, 1.5)
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is None and closed.closed


def test_keepalive_zero_keeps_nothing(pool: IdlePool) -> None:
    """0 turns reuse off: a connection given back is closed, and nothing is ever taken."""
    connection = Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", connection, 0)
    assert connection.closed and pool.count() == 0
    assert pool.take(ORIGIN, FIT, ADDRESSES, 0) is None


@pytest.mark.parametrize(
    ("origin", "fit", "addresses"),
    [
        (Origin("https", "other.test", 443), FIT, ADDRESSES),  # another host
        (Origin("https", "mcp.test", 8443), FIT, ADDRESSES),  # another port
        (Origin("http", "mcp.test", 443), FIT, ADDRESSES),  # another scheme
        (ORIGIN, ("/other-ca.pem", False), ADDRESSES),  # other trust
        (ORIGIN, ("/ca.pem", True), ADDRESSES),  # another private-network policy
        (ORIGIN, FIT, ("192.0.2.9",)),  # the gate no longer vets its address
    ],
    ids=["host", "port", "scheme", "trust", "policy", "address"],
)
def test_a_connection_only_serves_what_it_is_interchangeable_with(
    pool: IdlePool, origin: Origin, fit: tuple[str, bool], addresses: tuple[str, ...]
) -> None:
    """Origin, trust, policy and the vetted address must all match; otherwise the leg dials anew
    and the kept connection stays for its own."""
    connection = Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", connection, 1.5)
    assert pool.take(origin, fit, addresses, 1.5) is None
    assert pool.take(ORIGIN, FIT, ADDRESSES, 1.5) is connection


def test_an_origin_keeps_at_most_its_cap_the_oldest_closed(pool: IdlePool) -> None:
    """A burst of concurrent legs leaves at most MAX_IDLE_PER_ORIGIN idle connections."""
    connections = [Connection() for _ in range(MAX_IDLE_PER_ORIGIN + 2)]
    for connection in connections:
        pool.keep(ORIGIN, FIT, "192.0.2.1", connection, 1.5)
    assert pool.count(ORIGIN) == MAX_IDLE_PER_ORIGIN
    assert [c.closed for c in connections] == [True, True] + [False] * MAX_IDLE_PER_ORIGIN


def test_expired_connections_of_every_origin_are_closed_at_the_next_leg(pool: IdlePool, clock: Clock) -> None:
    """Nothing stays open long past its limit: the next keep() or take() sweeps all origins."""
    stale = Connection()
    pool.keep(Origin("https", "gone.test", 443), FIT, "192.0.2.1", stale, 1.5)
    clock.now += 2
    pool.take(ORIGIN, FIT, ADDRESSES, 1.5)
    assert stale.closed and pool.count() == 0


def test_drop_and_clear_close_what_they_forget(pool: IdlePool) -> None:
    """drop(origin) after a stale connection was found (its siblings may be stale too); clear() all."""
    mine, other = Connection(), Connection()
    pool.keep(ORIGIN, FIT, "192.0.2.1", mine, 1.5)
    pool.keep(Origin("https", "other.test", 443), FIT, "192.0.2.1", other, 1.5)
    pool.drop(ORIGIN)
    assert mine.closed and not other.closed and pool.count() == 1
    pool.clear()
    assert other.closed and pool.count() == 0


def test_after_a_fork_the_child_forgets_the_parents_connections_without_touching_them(pool: IdlePool) -> None:
    """The child's copy of each descriptor is closed (no shutdown, nothing sent): the parent's
    socket still works, and the child's pool is empty."""
    parent_end, peer = socket.socketpair()
    connection = Connection()
    connection.sock = parent_end
    pool.keep(ORIGIN, FIT, "192.0.2.1", connection, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads (Python 3.12)
        child = os.fork()
    if child == 0:  # pragma: no cover - reports through its exit status
        try:
            pool._after_fork_in_child()
            os._exit(0 if pool.count() == 0 and connection.sock is None else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with peer:
        parent_end.sendall(b"still mine")
        assert peer.recv(64) == b"still mine"
    parent_end.close()
    assert pool.take(ORIGIN, FIT, ADDRESSES, 30) is connection
