"""The leg watchdog: shuts a leg's socket when its grant is spent, and only then."""

from __future__ import annotations

import socket
import time

from nr_llm.mcp.watchdog import LegWatchdog


def test_a_blocked_read_returns_when_the_grant_is_spent() -> None:
    """A recv() on a silent peer returns (EOF) when the 0.3 s grant runs out, not at its 30 s timeout."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(30)
        started = time.monotonic()
        with LegWatchdog(0.3, allow_private_networks=True) as watchdog:
            watchdog.watch(ours)
            data = ours.recv(10)
        assert data == b"" and watchdog.fired
        assert 0.25 <= time.monotonic() - started < 5


def test_a_leg_that_ends_in_time_is_left_alone() -> None:
    """Exited before its grant, the watchdog never fires and the socket stays usable."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        with LegWatchdog(0.2, allow_private_networks=True) as watchdog:
            watchdog.watch(ours)
        time.sleep(0.4)
        assert not watchdog.fired
        theirs.sendall(b"x")
        assert ours.recv(1) == b"x"


def test_a_socket_registered_after_the_grant_is_shut_at_once() -> None:
    """A connection opened after the grant ran out is shut as soon as it is watched."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(30)
        with LegWatchdog(0.05, allow_private_networks=True) as watchdog:
            deadline = time.monotonic() + 5
            while not watchdog.fired and time.monotonic() < deadline:
                time.sleep(0.01)
            watchdog.watch(ours)
            assert ours.recv(10) == b""
