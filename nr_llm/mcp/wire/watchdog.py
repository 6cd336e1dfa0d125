"""Wall-clock enforcement of a leg's grant, below `requests`.

``requests``' ``timeout=`` bounds each socket wait, not a response: a server that sends
one byte every 0.2 s, or headers and then silence after a slow start, keeps a leg alive
far past its grant. So each leg runs under a watchdog that shuts its socket down when
the grant is spent; whatever the read was blocked on then returns at once. It is not a
cancellation seam: nothing outside the leg can trigger it, and the only event it reacts
to is the leg's own grant running out.

The socket is handed to the watchdog by connection classes that register it when a
connection opens or is taken from the pool (a kept-alive connection is reused without
opening again). The same classes read each answer's head within the header
allowance (headerlimit.py). The current leg is found through a context variable, because
urllib3 builds connections deep inside ``requests`` where no argument can reach.

The connection dials the host gate's vetted addresses itself and leaves urllib3's host
alone: urllib3 sends SNI and checks the certificate for its ``host``, which must stay the
URL's host name. (Setting urllib3's ``_dns_host`` to the address, as this once did, made
the IP the TLS identity: no SNI, and a certificate for the IP accepted for any name.)

Connections come from the process's idle pool (pool.py) and go back to it only through the
leg: the pool classes hand out a kept connection or a new one and never keep one themselves.
When the leg ends, its connection is kept if the leg machine found the answer read to its end
and the watchdog never fired; otherwise it is closed (a timeout, a cut, a 3xx, a broken cap, an
unread body, any failure). The leg also notes what its connection shows about delivery
(``Delivery``: reused, the request written, any byte of an answer), the evidence resend.py
decides a retry on.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import heapq
import http.client
import ipaddress
import itertools
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Hashable
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import create_connection

from .headerlimit import CappedResponse
from .hostgate import forbidden
from .pool import Origin, process_pool
from .redaction import masked_url


class RefusedPeer(Exception):
    """The connection reached a forbidden address after the host gate passed (DNS rebinding)."""


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
        # Set by the leg machine once the answer was read to its end: the connection may be kept.
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
        self._token = _current.set(self)
        _WATCHMAN.arm(self, time.monotonic() + self._seconds)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.done = True
            fired = self.fired
            for handle in self._handles:
                handle.close()
            self._handles.clear()
        _current.reset(self._token)
        _WATCHMAN.disarm(self)
        self._settle(keep=self.reusable and not fired and not self.spoiled)

    def adopt(self, connection: Any) -> None:
        """``connection`` serves this leg; its end keeps or closes it."""
        if self.connection is not None and self.connection is not connection:
            self.connection.close()
        self.connection = connection

    def _settle(self, *, keep: bool) -> None:
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


_current: contextvars.ContextVar[LegWatchdog | None] = contextvars.ContextVar("nr_llm_leg", default=None)


class _MaskedQueries(logging.Filter):
    """urllib3's DEBUG line of each request quotes its target, query and all ("POST
    /mcp?api_key=… HTTP/1.1" 200): in a leg of ours, every query value is masked before any
    handler sees it. Other code's requests (outside a leg) are left as urllib3 logs them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _current.get() is not None and isinstance(record.args, tuple):
            record.args = tuple(
                masked_url(arg) if isinstance(arg, str) and "?" in arg else arg for arg in record.args
            )
        return True


logging.getLogger("urllib3.connectionpool").addFilter(_MaskedQueries())


class _LegResponse(CappedResponse):
    """The answer's head, noting for the leg whether any byte of it arrived (even when it then
    fails), and whether anything followed the answer on its connection."""

    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self._leg_sock = sock

    def begin(self) -> None:
        try:
            super().begin()
        finally:
            watchdog = _current.get()
            if watchdog is not None and self.head_bytes:
                watchdog.delivery.answered = True

    def _close_conn(self) -> None:
        # Called when the body ended (or the answer is dropped), before the buffered file goes.
        watchdog = _current.get()
        if self.fp is not None and watchdog is not None and _unread(self.fp, self._leg_sock):
            watchdog.spoiled = True
        super()._close_conn()  # type: ignore[misc]


def _unread(fp: Any, sock: Any) -> bool:
    """Anything already sent past the answer: read ahead into ``fp``'s buffer, decrypted and
    waiting in the TLS layer (``SSLSocket.pending()``: a socket poll cannot see it), or in the
    kernel. Looked at without waiting; whatever it is, the next leg must not read it as its
    answer. A connection that cannot even be looked at is not worth keeping either."""
    try:
        timeout = sock.gettimeout()
        sock.settimeout(0)
        try:
            return bool(fp.peek(1))
        finally:
            sock.settimeout(timeout)
    except (ssl.SSLWantReadError, BlockingIOError):
        return False  # nothing there
    except (OSError, ValueError):
        return True


class _Watched:
    sock: Any
    response_class: type[http.client.HTTPResponse] = _LegResponse
    # The vetted address this connection was dialled to: a pooled connection serves only a
    # leg whose host gate vetted it too.
    dialled = ""

    def _new_conn(self) -> socket.socket:
        watchdog = _current.get()
        if watchdog is None:
            return super()._new_conn()  # type: ignore[misc,no-any-return]
        sock = self._dial(watchdog)
        if not watchdog.allow_private_networks:
            peer = ipaddress.ip_address(str(sock.getpeername()[0]).split("%", 1)[0])
            if forbidden(peer):
                sock.close()
                raise RefusedPeer(str(peer))
        # Watched from before the TLS handshake: a handshake can stall like a body.
        watchdog.watch(sock)
        if watchdog.fired:
            # The grant ran out while dialling: start no TLS handshake on a shut socket.
            # ssl.wrap_socket() would meet it as "not connected", and a reset peer then
            # makes it raise without closing the SSLSocket it made (an fd left to the GC).
            sock.close()
            raise ConnectTimeoutError(self, "the leg's grant ran out while the connection was made")
        return sock

    def _dial(self, watchdog: LegWatchdog) -> socket.socket:
        """A socket to the first vetted address that accepts, in the gate's order (a name
        whose first address refuses, e.g. IPv6 where nothing listens, reaches the next)."""
        if not watchdog.addresses:
            return super()._new_conn()  # type: ignore[misc,no-any-return]
        failure: Exception | None = None
        made: Any = self  # the urllib3 connection this class is mixed into
        for address in watchdog.addresses:
            if watchdog.fired:
                break
            # Mapped as urllib3's own _new_conn maps them, without its text (it names the URL's host).
            try:
                sock = create_connection(
                    (address, made.port),
                    made.timeout,
                    source_address=made.source_address,
                    socket_options=made.socket_options,
                )
                self.dialled = address
                return sock
            except TimeoutError:
                failure = ConnectTimeoutError(made, "the connection timed out")
            except OSError as exc:
                failure = NewConnectionError(made, "the connection could not be made")
                # Kept as the cause (never its text) so the message can say "connection refused".
                failure.__cause__ = exc
        if failure is None:
            raise ConnectTimeoutError(self, "the leg's grant ran out before a connection was made")
        raise failure

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        watchdog = _current.get()
        if watchdog is not None:
            watchdog.delivery.connected = True

    def request(self, *args: Any, **kwargs: Any) -> None:
        # urllib3 swallows a broken pipe or a reset while the request is written (to read an
        # answer the server may have sent first), so the proof that the request never left
        # completely is noted here, where the write itself raises.
        if self.sock is None:
            # Connected first, as http.client's first send would: what connecting writes (a
            # proxy tunnel's CONNECT) must not be taken for the request's head.
            self.connect()
        self._head = b""  # holding: the next send() is the head (``send``)
        try:
            super().request(*args, **kwargs)  # type: ignore[misc]
            if self._head:
                super().send(self._head)  # type: ignore[misc]  # no body: the head goes alone
        finally:
            self._head = None
        watchdog = _current.get()
        if watchdog is not None:
            watchdog.delivery.written = True

    #: While a request is written: b"" until its head is sent, then the head, held back.
    _head: bytes | None = None

    def send(self, data: Any) -> None:
        # urllib3 writes a request's head and its body in two sends: two TLS records, two
        # packets (no Nagle delay to merge them) and two reads and wake-ups for the server.
        # The head waits for the body's first bytes and goes out with them, in one.
        head = self._head
        if head is not None:
            if not head and isinstance(data, bytes | bytearray):
                self._head = bytes(data)
                return
            self._head = None
            if isinstance(data, bytes | bytearray):
                data = head + data
            elif head:
                super().send(head)  # type: ignore[misc]
        super().send(data)  # type: ignore[misc]


class WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _PooledConnections:
    """urllib3's pool interface over the process's idle pool (pool.py), for the leg in progress.

    urllib3 would keep a connection once its body is read, before the leg knows whether it
    ended cleanly; here nothing is kept but by the leg's end (``LegWatchdog._settle``)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        watchdog = _current.get()
        if watchdog is None:
            return self._new_conn()  # type: ignore[attr-defined]
        made: Any = self  # the urllib3 pool this class is mixed into
        origin = Origin(str(made.scheme), str(made.host), int(made.port))
        watchdog.delivery.origin = origin
        connection = None
        if not watchdog.fresh:
            connection = process_pool().take(
                origin, watchdog.fit, watchdog.addresses, watchdog.keepalive_seconds
            )
        if connection is None:
            connection = self._new_conn()  # type: ignore[attr-defined]
        else:
            watchdog.delivery.reused = watchdog.delivery.connected = True
            # Watched from before the request is written: a write can stall like a read.
            watchdog.watch(connection.sock)
        watchdog.adopt(connection)
        return connection

    def _put_conn(self, conn: Any) -> None:
        watchdog = _current.get()
        if conn is None or (watchdog is not None and conn is watchdog.connection):
            return  # the leg's own connection: its end keeps or closes it
        conn.close()


class WatchedHTTPConnectionPool(_PooledConnections, HTTPConnectionPool):
    ConnectionCls = WatchedHTTPConnection


class WatchedHTTPSConnectionPool(_PooledConnections, HTTPSConnectionPool):
    ConnectionCls = WatchedHTTPSConnection


POOL_CLASSES: dict[str, type[HTTPConnectionPool]] = {
    "http": WatchedHTTPConnectionPool,
    "https": WatchedHTTPSConnectionPool,
}
