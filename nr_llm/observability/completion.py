"""One completion per request: the access record and the ``RequestEvent``.

A wrapper (or, without one, the middleware) opens a ``Completion`` when the request
arrives and finishes it exactly once, when the last byte is handed to the server or the
client is known to be gone. The middleware adds what only Django knows (route, user,
the status it produced).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from ..conf import conf
from .events import CANCELLED, RequestEvent, emit, send, wanted
from .events import logger as events_logger
from .ids import request_id_from, trace_id_from
from .signal import DisconnectSignal, Phase
from .status import CLIENT_CLOSED_REQUEST

ACCESS_LOGGER = "nr_llm.access"
ACCESS_ATTRIBUTE = "nr_llm_access"
# The WSGI environ / ASGI scope key the wrappers put the completion under.
COMPLETION_KEY = "nr_llm.completion"

access_logger = logging.getLogger(ACCESS_LOGGER)


def access_level(status: int) -> int:
    """INFO for 1xx-3xx and every 499; WARNING for other 4xx; ERROR for 5xx."""
    if status < 400 or status == CLIENT_CLOSED_REQUEST:
        return logging.INFO
    return logging.WARNING if status < 500 else logging.ERROR


def escape(text: str) -> str:
    """Keep client-controlled text (path, method) on one log line (no newlines, no control bytes)."""
    if text.isprintable():
        return text
    return text.encode("unicode_escape", "backslashreplace").decode("ascii")


class Completion:
    """Mutable per-request state; ``finish()`` reports it once."""

    def __init__(
        self,
        *,
        method: str,
        path: str,
        request_id_header: str | None,
        traceparent: str | None,
        signal: DisconnectSignal | None = None,
    ) -> None:
        self.signal = signal if signal is not None else DisconnectSignal()
        self.method = method
        self.path = path
        self.request_id = request_id_from(request_id_header)
        self.trace_id = trace_id_from(traceparent)
        # Wall clock as a float: the datetime is only built for an event somebody receives.
        self._started_wall = time.time()
        self._started_ns = time.monotonic_ns()
        self.status_code: int | None = None
        self.bytes_sent = 0
        self.route: str | None = None
        self.user_id: str | None = None
        self.error_type: str | None = None
        self._finished = False
        self._lock = threading.Lock()

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def started_at(self) -> datetime:
        """When the request arrived (UTC), as ``datetime.now(UTC)`` would have said then."""
        return datetime.fromtimestamp(self._started_wall, UTC)

    def final_status(self) -> int:
        """The status to record: what was sent, or 499 if the client left before that.

        A 5xx is kept even then: an unclassified exception is a server error whatever the
        client did, and its error record must stay findable by its status.
        """
        status = self.status_code
        signal = self.signal
        if signal.aborted and signal.phase is not Phase.RESPONSE and (status is None or status < 500):
            return CLIENT_CLOSED_REQUEST
        # No status and no disconnect: the application died without answering.
        return status if status is not None else 500

    def finish(self) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
        duration_ms = round((time.monotonic_ns() - self._started_ns) / 1e6, 3)
        status = self.final_status()
        level = access_level(status)
        # Nothing is built for a logger no handler listens to (a trivial request's
        # records are a measurable share of its CPU).
        if wanted(access_logger, level):
            self._log_access(status, level, duration_ms)
        if wanted(events_logger, logging.INFO):
            self._emit_event(status, duration_ms)

    def _log_access(self, status: int, level: int, duration_ms: float) -> None:
        phase = self.signal.phase if self.signal.aborted else None
        fields: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "status": status,
            "duration_ms": duration_ms,
            "bytes": self.bytes_sent,
            "request_id": self.request_id,
        }
        if phase is not None:
            fields["phase"] = str(phase)
        args = (
            escape(self.method),
            escape(self.path),
            status,
            duration_ms,
            self.bytes_sent,
            self.request_id,
            f" phase={phase}" if phase is not None else "",
        )
        send(access_logger, level, "%s %s %s %.1fms %dB rid=%s%s", args, {ACCESS_ATTRIBUTE: fields})

    def _emit_event(self, status: int, duration_ms: float) -> None:
        # A 5xx stays a failure row even if the client also left: an unclassified
        # exception is a server error, and dropping its event would hide it (seed 003).
        cancelled = status == CLIENT_CLOSED_REQUEST or (self.signal.aborted and status < 500)
        if cancelled and not conf.REQUEST_EVENTS["include_cancelled"]:
            return
        emit(
            RequestEvent(
                request_id=self.request_id,
                trace_id=self.trace_id,
                method=self.method,
                route=self.route,
                status_code=CLIENT_CLOSED_REQUEST if cancelled else status,
                ok=False if cancelled else status < 400,
                duration_ms=duration_ms,
                started_at=self.started_at,
                user_id=self.user_id,
                outcome=CANCELLED if cancelled else None,
                error_type=None if cancelled else self.error_type,
            )
        )
