"""A TCP proxy on 127.0.0.1 that forwards requests at once and holds each answer back.

``SlowAnswers(upstream_port, delay)`` (a context manager; ``port`` once entered): whatever a
client sends reaches the upstream server at once, whatever the server answers reaches the client
``delay`` seconds after it came. So a server acts on a request (an authorization server rotates
a refresh token) long before the client can read that it did: a client whose budget ends in
between has been answered, and does not know it yet. Threads, all daemons, all bounded.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

LIMIT_SECONDS = 60.0


class SlowAnswers:
    def __init__(self, upstream_port: int, delay: float) -> None:
        self.upstream_port = upstream_port
        self.delay = delay
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> SlowAnswers:
        threading.Thread(target=self._accept, name="slow-answers", daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed: the proxy is done
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=LIMIT_SECONDS)
            self._sockets += [client, upstream]
            for source, target, delay in ((client, upstream, 0.0), (upstream, client, self.delay)):
                threading.Thread(target=self._pump, args=(source, target, delay), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, delay: float) -> None:
        source.settimeout(LIMIT_SECONDS)
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                time.sleep(delay)
                target.sendall(chunk)
            target.shutdown(socket.SHUT_WR)
