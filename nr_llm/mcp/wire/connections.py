"""The urllib3 connection and pool classes a leg's requests go through.

They hand each socket to the leg's watchdog (watchdog.py) when a connection opens or is taken
from the pool (a kept-alive connection is reused without opening again), and read each
answer's head within the header allowance (headerlimit.py). The leg in progress is found
through ``watchdog.current_leg``, because urllib3 builds connections deep inside ``requests``
where no argument can reach.

The connection dials the host gate's vetted addresses itself and leaves urllib3's host
alone: urllib3 sends SNI and checks the certificate for its ``host``, which must stay the
URL's host name. (Setting urllib3's ``_dns_host`` to the address, as this once did, made
the IP the TLS identity: no SNI, and a certificate for the IP accepted for any name.)

Connections come from the process's idle pool (pool.py) and go back to it only through the
leg: the pool classes hand out a kept connection or a new one and never keep one themselves.
"""

from __future__ import annotations

import http.client
import ipaddress
import logging
import socket
import ssl
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.util.connection import create_connection

from .headerlimit import CappedResponse
from .hostgate import forbidden
from .pool import Origin, process_pool
from .redaction import masked_url
from .watchdog import LegWatchdog, current_leg


class RefusedPeer(Exception):
    """The connection reached a forbidden address after the host gate passed (DNS rebinding)."""


class _MaskedQueries(logging.Filter):
    """urllib3's DEBUG line of each request quotes its target, query and all ("POST
    /mcp?api_key=… HTTP/1.1" 200): in a leg of ours, every query value is masked before any
    handler sees it. Other code's requests (outside a leg) are left as urllib3 logs them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if current_leg.get() is not None and isinstance(record.args, tuple):
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
            watchdog = current_leg.get()
            if watchdog is not None and self.head_bytes:
                watchdog.delivery.answered = True

    def _close_conn(self) -> None:
        # Called when the body ended (or the answer is dropped), before the buffered file goes.
        watchdog = current_leg.get()
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
        watchdog = current_leg.get()
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
        watchdog = current_leg.get()
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
        watchdog = current_leg.get()
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
    ended cleanly; here nothing is kept but by the leg's end (``LegWatchdog._release``)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        watchdog = current_leg.get()
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
        watchdog = current_leg.get()
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
