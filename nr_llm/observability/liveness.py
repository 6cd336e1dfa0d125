"""Asking a client socket whether the client is still there, the way nginx does.

An empty non-blocking peek means the peer closed; a reset is a reset; unread bytes are a
pipelined request from a client that is still there. Used by the WSGI wrapper's completion
(``environ["gunicorn.socket"]``), and only when someone asks: it is a system call.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Callable

from .signal import ClientDisconnected


def socket_probe(sock: object) -> Callable[[], BaseException | None] | None:
    """A liveness check for a plain TCP client socket, or None where none is possible."""
    # The exact type first: it is what gunicorn hands over, and the cheapest test.
    if type(sock) is not socket.socket and (
        not isinstance(sock, socket.socket) or isinstance(sock, ssl.SSLSocket)
    ):
        return None

    def probe() -> BaseException | None:
        try:
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            if not poller.poll(0):
                return None  # nothing to read: the client is waiting for us
            # Readable: either a pipelined request (alive) or EOF/reset (gone).
            data = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None
        except ConnectionError as exc:
            error = ClientDisconnected("the client reset the connection")
            error.__cause__ = exc
            return error
        except (OSError, ValueError):
            return None  # a socket we cannot judge is treated as alive
        return ClientDisconnected("the client closed the connection") if data == b"" else None

    return probe
