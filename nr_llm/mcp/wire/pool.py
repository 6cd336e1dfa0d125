"""Idle connections kept for the next leg to the same origin: one pool per process.

Without it every operation pays a TCP and a TLS handshake before its one POST: two round trips
on any real network, more than the call itself. A connection is kept only when its leg ended
cleanly (watchdog.py decides: read to the end of the body, not cut, no 3xx, no cap broken, the
server did not say it closes) and is handed to one leg at a time.

Interchangeable means: the same origin (scheme, host, port: the TLS identity), the address it
was dialled to among the addresses the taking leg's host gate vetted, the same TLS trust and
the same private-network policy. Nothing else lives on a connection: session ids and
credentials are headers of each request, so one server's never reaches another.

The idle limit (``NR_LLM_MCP_KEEPALIVE_SECONDS``, default 1.5 s) stays below the keep-alive
timeouts of common servers: gunicorn's ``keepalive`` is 2 s (uvicorn's gunicorn worker takes
it over), uvicorn's own ``timeout_keep_alive`` 5 s, nginx's ``keepalive_timeout`` 75 s. A
connection the server is about to close would take our request with it; 1.5 s leaves half a
second for the answer's and the request's way (a round trip) before gunicorn's 2 s. A closed
one is caught before reuse (the socket reads as closed); the limit is for the moment in
between. 0 turns reuse off.

After a fork (gunicorn ``--preload``) the child forgets the parent's connections, closing only
its own copies of their descriptors: two processes writing on one TLS connection would
corrupt it, and a shutdown would cut the parent's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

DEFAULT_KEEPALIVE_SECONDS = 1.5
# Idle connections kept per origin; more legs at once still run, each on a new connection.
MAX_IDLE_PER_ORIGIN = 8


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int


@dataclass
class _Idle:
    connection: Any  # a urllib3 connection (connections.py)
    address: str
    fit: Hashable  # the TLS trust and the private-network policy it was made under
    since: float
    until: float  # since + the idle limit of the leg that kept it


class IdlePool:
    """Connections between legs; ``clock`` (seconds, monotonic) is a seam for tests."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._forget()

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[Origin, list[_Idle]] = {}

    def take(
        self, origin: Origin, fit: Hashable, addresses: tuple[str, ...], keepalive_seconds: float
    ) -> Any | None:
        """The most recently used idle connection that fits, is still open and holds nothing
        unread, or None."""
        if keepalive_seconds <= 0:
            return None
        while True:
            with self._lock:
                expired = self._sweep(self._clock())
                entries = self._idle.get(origin, [])
                found = next(
                    (entry for entry in reversed(entries) if entry.fit == fit and entry.address in addresses),
                    None,
                )
                if found is not None:
                    entries.remove(found)
            for stale in expired:
                stale.close()
            if found is None:
                return None
            # Outside the lock: a connection idle too long, or one the server has closed (its
            # socket reads: EOF or an alert, never an answer we are owed), is dropped here.
            now = self._clock()
            fresh = now < found.until and now - found.since < keepalive_seconds
            if fresh and found.connection.is_connected and not _pending(found.connection):
                return found.connection
            found.connection.close()

    def keep(
        self, origin: Origin, fit: Hashable, address: str, connection: Any, keepalive_seconds: float
    ) -> None:
        """Keep ``connection`` for the next leg (closed instead when reuse is off or the origin is full)."""
        if keepalive_seconds <= 0:
            connection.close()
            return
        now = self._clock()
        with self._lock:
            dropped = self._sweep(now)
            entries = self._idle.setdefault(origin, [])
            entries.append(_Idle(connection, address, fit, now, now + keepalive_seconds))
            while len(entries) > MAX_IDLE_PER_ORIGIN:
                dropped.append(entries.pop(0).connection)
        for stale in dropped:
            stale.close()

    def _sweep(self, now: float) -> list[Any]:
        """Take out every connection past its idle limit, whichever origin it serves (under the
        lock), so that a burst of legs long ago leaves no sockets open; the caller closes them."""
        expired: list[Any] = []
        for origin, idle in list(self._idle.items()):
            expired += [entry.connection for entry in idle if now >= entry.until]
            idle[:] = [entry for entry in idle if now < entry.until]
            if not idle:
                del self._idle[origin]
        return expired

    def drop(self, origin: Origin) -> None:
        """Close every idle connection of ``origin`` (one was found broken: the others may be too)."""
        with self._lock:
            entries = self._idle.pop(origin, [])
        for entry in entries:
            entry.connection.close()

    def clear(self) -> None:
        with self._lock:
            entries = [entry for idle in self._idle.values() for entry in idle]
            self._idle.clear()
        for entry in entries:
            entry.connection.close()

    def count(self, origin: Origin | None = None) -> int:
        """Idle connections kept (of ``origin``, or in all): for tests and benchmarks."""
        with self._lock:
            if origin is not None:
                return len(self._idle.get(origin, []))
            return sum(len(idle) for idle in self._idle.values())

    def _after_fork_in_child(self) -> None:
        # The parent's lock may have been held mid-use by a thread that does not exist here:
        # no locking, only this thread runs. Closing the child's copy of a descriptor sends
        # nothing (no TLS close_notify, no shutdown): the parent's connection is untouched.
        entries = [entry for idle in self._idle.values() for entry in idle]
        self._forget()
        for entry in entries:
            sock = getattr(entry.connection, "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    os.close(sock.detach())
            entry.connection.sock = None


def _pending(connection: Any) -> bool:
    """Decrypted bytes wait in the connection's TLS layer: nothing we are owed (the socket poll
    of ``is_connected`` cannot see them), so the next leg must not read them as its answer."""
    pending = getattr(connection.sock, "pending", None)
    return pending is not None and pending() > 0


_POOL = IdlePool()
os.register_at_fork(after_in_child=_POOL._after_fork_in_child)


def process_pool() -> IdlePool:
    return _POOL
