"""Watching servers for changes to their tools (``manage.py mcp_watch``): for each enabled
server an operator marked "watch for changes", one thread holds its change stream open
(mcp/protocol/listen.py) and another re-imports its catalogue when it announces a change.

Bounded whatever a server does:

- changes are debounced: a burst (a change every 10 ms) is one re-import, and a server is
  re-imported at most once per ``min_import_seconds``;
- a stream is held for a window and then reopened, so a connection that never ends is renewed;
  one that fails or ends early is reopened after a back-off that doubles up to a minute, so a
  listener that dies every second costs a handful of connections a minute, not sixty;
- on every reopen after a failure the catalogue is re-imported (a server does not replay what it
  announced while nobody listened), under the same debounce.

The re-import itself is the caller's (``importer``: the command enqueues the import task, as the
admin does), so a changed enabled tool is disabled for review exactly as on a manual import.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections, connection

from ..mcp import McpTransportError, listen
from ..models import McpServer
from ..servers.endpoints import endpoint_for, mcp_client

logger = logging.getLogger("nr_llm.watch")

Importer = Callable[[McpServer], None]


@dataclasses.dataclass(frozen=True)
class WatchTiming:
    #: Changes this close together are one re-import.
    debounce_seconds: float = 0.5
    #: A server is re-imported at most once in this many seconds.
    min_import_seconds: float = 5.0
    #: A stream is reopened after this long, whatever the server does.
    window_seconds: float = 300.0
    #: A stream that lived less than this counts as a failure (back-off).
    healthy_seconds: float = 10.0
    first_backoff_seconds: float = 1.0
    max_backoff_seconds: float = 60.0


class Reimports:
    """One server's debounced re-imports: ``changed()`` from any thread, ``run`` on its own."""

    def __init__(self, server_pk: int, importer: Importer, timing: WatchTiming) -> None:
        self.server_pk = server_pk
        self.importer = importer
        self.timing = timing
        self.count = 0
        self._pending = threading.Event()
        self._last = float("-inf")

    def changed(self) -> None:
        self._pending.set()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if not self._pending.wait(0.2):
                continue
            # Let the burst settle, and keep to the per-server minimum interval.
            wait = max(
                self.timing.debounce_seconds, self._last + self.timing.min_import_seconds - time.monotonic()
            )
            if stop.wait(wait):
                return
            self._pending.clear()
            self._last = time.monotonic()
            self.count += 1
            self._import()

    def _import(self) -> None:
        close_old_connections()
        try:
            server = McpServer.objects.filter(pk=self.server_pk).first()
            if server is not None:
                self.importer(server)
        except Exception:
            # A reporting boundary: one failed import must not end the watch.
            logger.exception("re-import of MCP server #%s after a change failed", self.server_pk)
        finally:
            connection.close()


class ServerWatch:
    """The two threads of one watched server."""

    def __init__(self, server: McpServer, importer: Importer, timing: WatchTiming) -> None:
        self.server_pk = server.pk
        self.identifier = server.identifier
        self.timing = timing
        self.reimports = Reimports(server.pk, importer, timing)
        self.windows = 0
        self.stop = threading.Event()
        self._threads = [
            threading.Thread(
                target=self.reimports.run, args=(self.stop,), name=f"nr_llm-reimport-{server.pk}"
            ),
            threading.Thread(target=self._listen, name=f"nr_llm-watch-{server.pk}"),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.daemon = True
            thread.start()

    def close(self, timeout: float = 5.0) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def _listen(self) -> None:
        backoff = self.timing.first_backoff_seconds
        self.reimports.changed()  # catch up with what changed before the watch began
        while not self.stop.is_set():
            close_old_connections()
            server = McpServer.objects.filter(pk=self.server_pk, enabled=True, watch_changes=True).first()
            endpoint = None if server is None else endpoint_for(server)
            connection.close()  # the stream may be held for minutes: no connection held with it
            if endpoint is None:
                return  # no longer watched; the supervisor starts it again if it is
            started = time.monotonic()
            self.windows += 1
            try:
                window = listen(
                    mcp_client(), endpoint, self.reimports.changed, window_seconds=self.timing.window_seconds
                )
                lived = time.monotonic() - started
                healthy = not window.closed or lived >= self.timing.healthy_seconds
            except McpTransportError as exc:
                if _offers_no_stream(exc):
                    # Asking again soon would get the same answer: try once per longest back-off,
                    # and re-import nothing (no stream was lost, there was none).
                    logger.warning(
                        "MCP server %s offers no change stream (%s); asking again in %g s",
                        self.identifier,
                        exc,
                        self.timing.max_backoff_seconds,
                    )
                    if self.stop.wait(self.timing.max_backoff_seconds):
                        return
                    continue
                logger.warning("watching MCP server %s: %s", self.identifier, exc)
                healthy = False
            if healthy:
                backoff = self.timing.first_backoff_seconds
                continue
            if self.stop.wait(backoff):
                return
            backoff = min(backoff * 2, self.timing.max_backoff_seconds)
            self.reimports.changed()  # what was announced while nobody listened is lost


def _offers_no_stream(exc: McpTransportError) -> bool:
    """The server answered that it has no change stream: ``subscriptions/listen`` unknown
    (-32601), or no GET stream in the handshake era (405)."""
    return (exc.kind == "rpc_error" and exc.code == -32601) or (
        exc.kind == "status" and exc.http_status == 405
    )


class Watcher:
    """Every watched server's ``ServerWatch``, started and stopped as operators mark servers
    (re-read every ``reload_seconds``)."""

    def __init__(self, importer: Importer, timing: WatchTiming | None = None) -> None:
        self.importer = importer
        self.timing = timing or WatchTiming()
        self.watches: dict[int, ServerWatch] = {}

    def reload(self) -> None:
        close_old_connections()
        try:
            watched = {s.pk: s for s in McpServer.objects.filter(enabled=True, watch_changes=True)}
        finally:
            connection.close()
        for pk in list(self.watches):
            watch = self.watches[pk]
            if pk not in watched or not any(t.is_alive() for t in watch._threads):
                watch.close()
                del self.watches[pk]
        for pk, server in watched.items():
            if pk not in self.watches:
                watch = self.watches[pk] = ServerWatch(server, self.importer, self.timing)
                watch.start()
                logger.info("watching MCP server %s for changes", server.identifier)

    def run(
        self, stop: threading.Event, reload_seconds: float = 30.0, tick: Callable[[], None] | None = None
    ) -> None:
        """Watch until ``stop`` is set; ``tick`` runs after each reload (the periodic re-import)."""
        try:
            while not stop.is_set():
                self.reload()
                if tick is not None:
                    tick()
                stop.wait(reload_seconds)
        finally:
            self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Stop every watch, waiting ``timeout`` in all. A stream in flight is not cut (the
        client cannot be cancelled by design): its daemon thread ends with the window or
        the process, and holds no database connection meanwhile."""
        for watch in self.watches.values():
            watch.stop.set()
        ends = time.monotonic() + timeout
        for watch in self.watches.values():
            watch.close(max(ends - time.monotonic(), 0.0))
        self.watches.clear()
