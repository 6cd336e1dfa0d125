"""Wall-clock enforcement of a leg's grant, below `requests`.

``requests``' ``timeout=`` bounds each socket wait, not a response: a server that sends
one byte every 0.2 s, or headers and then silence after a slow start, keeps a leg alive
far past its grant. So each leg runs under a watchdog that shuts its socket down when
the grant is spent; whatever the read was blocked on then returns at once. It is not a
cancellation seam: nothing outside the leg can trigger it, and the only event it reacts
to is the leg's own grant running out.

The socket is handed to the watchdog by connection classes that register it when a
connection opens and before a response is read (a kept-alive connection is reused
without opening again). The current leg is found through a context variable, because
urllib3 builds connections deep inside ``requests`` where no argument can reach.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import socket
import threading
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .hostgate import forbidden


class RefusedPeer(Exception):
    """The connection reached a forbidden address after the host gate passed (DNS rebinding)."""


class LegWatchdog:
    """Shuts the leg's socket down ``seconds`` after it was armed, unless disarmed first."""

    def __init__(self, seconds: float, *, allow_private_networks: bool) -> None:
        self.allow_private_networks = allow_private_networks
        self.fired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> LegWatchdog:
        self._token = _current.set(self)
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._timer.cancel()
        _current.reset(self._token)

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    # Already closed by the pool or the peer: nothing left to stop.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


_current: contextvars.ContextVar[LegWatchdog | None] = contextvars.ContextVar("nr_llm_leg", default=None)


class _Watched:
    sock: Any

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        watchdog = _current.get()
        if watchdog is None:
            return
        if not watchdog.allow_private_networks:
            peer = ipaddress.ip_address(str(self.sock.getpeername()[0]).split("%", 1)[0])
            if forbidden(peer):
                self.sock.close()
                raise RefusedPeer(str(peer))
        watchdog.watch(self.sock)

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        watchdog = _current.get()
        if watchdog is not None:
            watchdog.watch(self.sock)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class WatchedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = WatchedHTTPConnection


class WatchedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = WatchedHTTPSConnection


POOL_CLASSES: dict[str, type[HTTPConnectionPool]] = {
    "http": WatchedHTTPConnectionPool,
    "https": WatchedHTTPSConnectionPool,
}
