"""Wall-clock enforcement of a leg's grant, below `requests`.

``requests``' ``timeout=`` bounds each socket wait, not a response: a server that sends
one byte every 0.2 s, or headers and then silence after a slow start, keeps a leg alive
far past its grant. So each leg runs under a watchdog that shuts its socket down when
the grant is spent; whatever the read was blocked on then returns at once. It is not a
cancellation seam: nothing outside the leg can trigger it, and the only event it reacts
to is the leg's own grant running out.

The sockets reach the watchdog through the connection classes (connections.py), which find
the leg in progress through ``current_leg``. When the leg ends, its connection is kept if the
request code (legs.py) found the answer read to its end and the watchdog never fired; otherwise it is
closed (a timeout, a cut, a 3xx, a broken cap, an unread body, any failure). The leg also notes
what its connection shows about delivery (``Delivery``: reused, the request written, any byte
of an answer), the evidence resend.py decides a retry on.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Hashable
from typing import Any

from .pool import Origin, process_pool


@dataclasses.dataclass
class Delivery:
    """What a leg's connection showed about its request reaching the server (resend.py)."""

    reused: bool = False  # the connection came from the idle pool
    # Connected, its TLS handshake done (or reused): a TLS error after this is a broken
    # connection, not a certificate or handshake problem.
    connected: bool = False
    written: bool = False  # the whole request was handed to the socket
    answered: bool = False  # at least one byte of an answer arrived
    origin: Origin | None = None


class LegWatchdog:
    """Shuts the leg's sockets down ``seconds`` after it was entered, unless exited first.

    ``keepalive_seconds`` is the idle pool's limit for this leg (0: a new connection, closed
    after the leg); ``trust`` the TLS trust it verifies with (part of what makes a pooled
    connection fit); ``fresh`` refuses pooled connections (the one retry after a stale one)."""

    def __init__(
        self,
        seconds: float,
        *,
        allow_private_networks: bool,
        addresses: tuple[str, ...] = (),
        keepalive_seconds: float = 0.0,
        trust: Hashable = None,
        fresh: bool = False,
        delivery: Delivery | None = None,
    ) -> None:
        self.allow_private_networks = allow_private_networks
        # The operation's vetted addresses: connections dial these, never a fresh lookup.
        self.addresses = addresses
        self.keepalive_seconds = keepalive_seconds
        self.fit = (trust, allow_private_networks)
        self.fresh = fresh
        self.delivery = delivery or Delivery()
        # Set by legs.py once the answer was read to its end: the connection may be kept.
        self.reusable = False
        # Bytes came past the answer (``_LegResponse``): the connection is never kept.
        self.spoiled = False
        self.connection: Any = None
        self.fired = False
        self.done = False
        self._seconds = seconds
        self._lock = threading.Lock()
        self._handles: list[socket.socket] = []

    def __enter__(self) -> LegWatchdog:
        self._token = current_leg.set(self)
        _WATCHMAN.arm(self, time.monotonic() + self._seconds)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.done = True
            fired = self.fired
            for handle in self._handles:
                handle.close()
            self._handles.clear()
        current_leg.reset(self._token)
        _WATCHMAN.disarm(self)
        self._release(keep=self.reusable and not fired and not self.spoiled)

    def adopt(self, connection: Any) -> None:
        """``connection`` serves this leg; its end keeps or closes it."""
        if self.connection is not None and self.connection is not connection:
            self.connection.close()
        self.connection = connection

    def _release(self, *, keep: bool) -> None:
        connection, self.connection = self.connection, None
        if connection is None:
            return
        origin = self.delivery.origin
        # No socket: http.client closed it for an answer that ends the connection (Connection: close).
        if keep and origin is not None and connection.sock is not None:
            process_pool().keep(origin, self.fit, connection.dialled, connection, self.keepalive_seconds)
        else:
            connection.close()

    def watch(self, sock: socket.socket | None) -> None:
        """Watch the connection behind ``sock`` through a duplicate of its descriptor.

        The duplicate is ours to shut down and close: it survives the TLS wrapper taking
        over the original (so a stalled handshake is cut too), touches no TLS state, and
        can never point at someone else's socket after the connection is closed.
        """
        if sock is None or sock.fileno() < 0:
            return
        handle = socket.socket(fileno=os.dup(sock.fileno()))
        with self._lock:
            if self.done:
                handle.close()
                return
            self._handles.append(handle)
            if self.fired:
                _shut(handle)

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = True
            for handle in self._handles:
                _shut(handle)


class _Watchman:
    """One thread for all legs: a heap of due times, so arming a leg costs a lock, not a thread start.

    A finished leg leaves the heap at once (``disarm``): with a long budget (there is no upper
    clamp) it would otherwise stay there until its due time, and a burst of legs would pile up.
    The heap holds the legs in progress only, so removing one costs a pass over few.
    """

    def __init__(self) -> None:
        self._sequence = itertools.count()
        self._forget()

    def _forget(self) -> None:
        # Also run in a forked child (a preloading gunicorn worker): the parent's thread
        # does not exist there, and its lock may have been copied mid-use.
        self._condition = threading.Condition()
        self._due: list[tuple[float, int, LegWatchdog]] = []
        self._started = False

    def arm(self, watchdog: LegWatchdog, due: float) -> None:
        with self._condition:
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name="nr-llm-mcp-leg-watchdog", daemon=True).start()
            heapq.heappush(self._due, (due, next(self._sequence), watchdog))
            if self._due[0][2] is watchdog:
                self._condition.notify()

    def disarm(self, watchdog: LegWatchdog) -> None:
        with self._condition:
            for index, entry in enumerate(self._due):
                if entry[2] is watchdog:
                    last = self._due.pop()
                    if index < len(self._due):
                        self._due[index] = last
                        heapq.heapify(self._due)
                    return

    def _run(self) -> None:
        with self._condition:
            while True:
                if not self._due:
                    self._condition.wait()
                    continue
                # Only the due time is held while waiting: a leg that ends meanwhile is let go.
                wait = self._due[0][0] - time.monotonic()
                if wait > 0:
                    self._condition.wait(wait)
                    continue
                _, _, watchdog = heapq.heappop(self._due)
                watchdog.fire()
                del watchdog


_WATCHMAN = _Watchman()
os.register_at_fork(after_in_child=_WATCHMAN._forget)


def _shut(sock: socket.socket) -> None:
    # Already closed by the pool or the peer: nothing left to stop.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


#: The leg in progress: urllib3 builds connections deep inside ``requests``, where no argument can reach.
current_leg: contextvars.ContextVar[LegWatchdog | None] = contextvars.ContextVar("nr_llm_leg", default=None)
