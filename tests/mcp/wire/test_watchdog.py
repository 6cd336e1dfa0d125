"""The leg watchdog: shuts a leg's socket when its grant is spent, and only then."""

from __future__ import annotations

import gc
import socket
import time
import warnings

import pytest
from urllib3.exceptions import ConnectTimeoutError

from nr_llm.mcp.wire.connections import WatchedHTTPSConnection
from nr_llm.mcp.wire.watchdog import _WATCHMAN, LegWatchdog


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
        # Disarmed: no longer due, so it can never fire.
        assert all(entry[2] is not watchdog for entry in _WATCHMAN._due)
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


def test_a_forked_child_gets_its_own_watchdog_thread() -> None:
    """After fork (a preloading worker), a leg in the child is still cut at its grant."""
    import os

    with LegWatchdog(0.05, allow_private_networks=True):
        pass  # start the parent's watchdog thread
    with warnings.catch_warnings():
        # Python 3.12+ warns that forking a threaded process may deadlock; that very
        # situation (a worker forked after the watchdog thread started) is under test.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: exit 0 only if its leg was cut in time
        code = 1
        try:
            ours, theirs = socket.socketpair()
            ours.settimeout(10)
            with LegWatchdog(0.2, allow_private_networks=True) as watchdog:
                watchdog.watch(ours)
                code = 0 if ours.recv(1) == b"" and watchdog.fired else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_grant_spent_while_dialling_starts_no_tls_handshake() -> None:
    """A connection whose grant ran out while it was made is closed and refused before the TLS
    wrap: started on the shut socket, ssl's wrap can raise without closing the SSLSocket it
    made (seen as a ResourceWarning in a later test on a loaded CI machine)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with LegWatchdog(0.05, allow_private_networks=True) as watchdog:
            deadline = time.monotonic() + 5
            while not watchdog.fired and time.monotonic() < deadline:
                time.sleep(0.01)
            connection = WatchedHTTPSConnection("127.0.0.1", port, timeout=5)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with pytest.raises(ConnectTimeoutError, match="grant ran out"):
                    connection.connect()
                connection.close()
                gc.collect()
        # Nothing reached the TLS layer, so nothing was left for the garbage collector to close.
        assert not [warning for warning in caught if issubclass(warning.category, ResourceWarning)]
        assert connection.sock is None


def test_a_vetted_address_is_dialled_while_the_host_stays_the_url_s_name() -> None:
    """The connection reaches the vetted address, yet its host (urllib3's SNI and certificate
    name) is still the URL's name; the first address that refuses is skipped."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with LegWatchdog(5, allow_private_networks=True, addresses=("127.0.0.2", "127.0.0.1")):
            connection = WatchedHTTPSConnection("mcp.test", port, timeout=5)
            sock = connection._new_conn()
            with sock:
                assert sock.getpeername() == ("127.0.0.1", port)
        accepted, _ = listener.accept()
        accepted.close()
    assert connection.host == "mcp.test"


def test_finished_legs_leave_the_watchman_at_once_whatever_their_budget() -> None:
    """501 legs with a 3600 s budget, each ended at once: none stays in the watchman's heap until
    its due time, so memory stays flat under a long burst (issue 25, item 10); a leg still in
    progress stays, and is let go when it ends. (The heap is the process's: another test's leg
    still running on a thread of its own may be in it too, and is left out of the count.)"""

    def ours_in_heap() -> list[LegWatchdog]:
        return [entry[2] for entry in _WATCHMAN._due if entry[2] in finished or entry[2] is running]

    ours, theirs = socket.socketpair()
    finished: list[LegWatchdog] = []
    with ours, theirs:
        with LegWatchdog(3600, allow_private_networks=True) as running:
            for _ in range(501):
                with LegWatchdog(3600, allow_private_networks=True) as watchdog:
                    watchdog.watch(ours)
                finished.append(watchdog)
            assert ours_in_heap() == [running]
        assert ours_in_heap() == []
        assert not running.fired and not any(leg.fired for leg in finished)


def test_a_leg_armed_after_a_longer_one_still_fires_on_time() -> None:
    """Removing finished legs keeps the heap in order: a short leg behind long ones that ended
    is still cut at its own grant."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.settimeout(30)
        with LegWatchdog(3600, allow_private_networks=True):
            for _ in range(20):
                with LegWatchdog(3600, allow_private_networks=True):
                    pass
            started = time.monotonic()
            with LegWatchdog(0.3, allow_private_networks=True) as short:
                short.watch(ours)
                assert ours.recv(10) == b""
            assert short.fired and 0.25 <= time.monotonic() - started < 5
