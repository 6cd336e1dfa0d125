"""One completion per request: the access record and the ``RequestEvent``.

A wrapper (or, without one, the middleware) opens a ``Completion`` when the request
arrives and finishes it exactly once, when the last byte is handed to the server or the
client is known to be gone. The completion is the request's disconnect signal too (one
object per request, not two). The middleware hands it the request, so what only Django
knows (route, user) is read when the records are built.

Cost matters here: this runs on every request of the site. Nothing is computed for a
record nobody receives (request id, trace id, route, user, timestamps), and everything
that is computed is computed once, in ``finish()``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.utils.functional import empty

from ..conf import conf
from .events import CANCELLED, RequestEvent, emit, has_receiver, send
from .events import logger as events_logger
from .ids import request_id_from, trace_id_from
from .liveness import socket_probe
from .signal import DisconnectSignal, Phase
from .status import CLIENT_CLOSED_REQUEST

if TYPE_CHECKING:
    from django.http import HttpRequest

ACCESS_LOGGER = "nr_llm.access"
ACCESS_ATTRIBUTE = "nr_llm_access"
# The WSGI environ / ASGI scope key the wrappers put the completion under.
COMPLETION_KEY = "nr_llm.completion"

access_logger = logging.getLogger(ACCESS_LOGGER)

# One lock for every completion's once-only check: it is held for two instructions, and
# a lock allocated per request costs more than the rare wait on a shared one.
_FINISH_LOCK = threading.Lock()


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


class Completion(DisconnectSignal):
    """Per-request state: the disconnect signal plus what the completion reports, once."""

    __slots__ = (
        "_client_socket",
        "_finished",
        "_request_id_header",
        "_started_ns",
        "_traceparent",
        "bytes_sent",
        "error_type",
        "method",
        "path",
        "request",
        "route",
        "status_code",
        "user_id",
    )

    def __init__(
        self,
        *,
        method: str,
        path: str,
        request_id_header: str | None = None,
        traceparent: str | None = None,
        probe: Callable[[], BaseException | None] | None = None,
        client_socket: object = None,
    ) -> None:
        # DisconnectSignal.__init__'s four fields, set here rather than through a
        # super() call: this runs on every request of the site.
        self._reason: BaseException | None = None
        self._phase: Phase | None = None
        self._probe = probe
        # The server's client socket (WSGI): a probe is made from it only when someone asks
        # (check()), which most requests never do.
        self._client_socket = client_socket
        self.response_started = False
        self._started_ns = time.monotonic_ns()
        self.method = method
        self.path = path
        # Raw header values: validated (and an id drawn) only when a record is built.
        self._request_id_header = request_id_header
        self._traceparent = traceparent
        self.status_code: int | None = None
        self.bytes_sent = 0
        # Set by the middleware; route and user are read from it when records are built,
        # so a cancelled async view (which never returns through the middleware) is named too.
        self.request: HttpRequest | None = None
        self.route: str | None = None
        self.user_id: str | None = None
        self.error_type: str | None = None
        self._finished = False

    @property
    def finished(self) -> bool:
        return self._finished

    def check(self, phase: Phase | None = None) -> bool:
        if self._client_socket is not None:
            if self._probe is None:
                self._probe = socket_probe(self._client_socket)
            self._client_socket = None
        return super().check(phase)

    def age_ns(self) -> int:
        """Nanoseconds since the request was opened (monotonic)."""
        return time.monotonic_ns() - self._started_ns

    def final_status(self) -> int:
        """The status to record: what was sent, or 499 if the client left before that.

        A 5xx is kept even then: an unclassified exception is a server error whatever the
        client did, and its error record must stay findable by its status.
        """
        status = self.status_code
        left_early = self._reason is not None and self._phase is not Phase.RESPONSE
        if left_early and (status is None or status < 500):
            return CLIENT_CLOSED_REQUEST
        # No status and no disconnect: the application died without answering.
        return status if status is not None else 500

    def finish(self) -> None:
        with _FINISH_LOCK:
            if self._finished:
                return
            self._finished = True
        request, self.request = self.request, None  # the request holds us: break the cycle
        status = self.status_code
        if self._reason is None and status is not None and status < 400:
            level = logging.INFO  # the common case, without two more calls
        else:
            status = self.final_status()
            level = access_level(status)
        # Nothing is built for a logger no handler listens to (a trivial request's
        # records are a measurable share of its CPU); the level test first, inline: in a
        # site that routes neither logger, it is all that runs.
        access = access_logger.isEnabledFor(level) and has_receiver(access_logger, level)
        event = (
            events_logger.isEnabledFor(logging.INFO)
            and has_receiver(events_logger, logging.INFO)
            and self._event_wanted(status)
        )
        if not (access or event):
            return
        # Nearest microsecond, as round(ms, 3) would give, without round()'s decimal work.
        duration_ms = (time.monotonic_ns() - self._started_ns + 500) // 1000 / 1000
        request_id = request_id_from(self._request_id_header)
        if access:
            self._log_access(status, level, duration_ms, request_id)
        if event:
            if request is not None:
                self._read_request(request)
            self._emit_event(status, duration_ms, request_id)

    def _event_wanted(self, status: int) -> bool:
        return not self._cancelled(status) or bool(conf.REQUEST_EVENTS["include_cancelled"])

    def _cancelled(self, status: int) -> bool:
        # A 5xx stays a failure even if the client also left: dropping it would hide a server error.
        return status == CLIENT_CLOSED_REQUEST or (self._reason is not None and status < 500)

    def _started_at(self) -> datetime:
        """When the request arrived (UTC): the wall clock now minus the monotonic time since.

        Both clocks are read here, side by side, and only for an event: a request nobody
        records reads one clock, not two.
        """
        now = time.time()
        since = (time.monotonic_ns() - self._started_ns) / 1e9
        return datetime.fromtimestamp(now - since, UTC)

    def _read_request(self, request: HttpRequest) -> None:
        if self.route is None:
            match = request.resolver_match
            self.route = match.route if match is not None else None
        if self.user_id is None:
            self.user_id = _user_id(request)

    def _log_access(self, status: int, level: int, duration_ms: float, request_id: str) -> None:
        phase = self._phase if self._reason is not None else None
        fields: dict[str, Any] = {
            "method": self.method,
            "path": self.path,
            "status": status,
            "duration_ms": duration_ms,
            "bytes": self.bytes_sent,
            "request_id": request_id,
        }
        if phase is not None:
            fields["phase"] = str(phase)
        args = (
            escape(self.method),
            escape(self.path),
            status,
            duration_ms,
            self.bytes_sent,
            request_id,
            f" phase={phase}" if phase is not None else "",
        )
        send(access_logger, level, "%s %s %s %.1fms %dB rid=%s%s", args, {ACCESS_ATTRIBUTE: fields})

    def _emit_event(self, status: int, duration_ms: float, request_id: str) -> None:
        cancelled = self._cancelled(status)
        emit(
            RequestEvent(
                request_id=request_id,
                trace_id=trace_id_from(self._traceparent),
                method=self.method,
                route=self.route,
                status_code=CLIENT_CLOSED_REQUEST if cancelled else status,
                ok=False if cancelled else status < 400,
                duration_ms=duration_ms,
                started_at=self._started_at(),
                user_id=self.user_id,
                outcome=CANCELLED if cancelled else None,
                error_type=None if cancelled else self.error_type,
            )
        )


def _user_id(request: HttpRequest) -> str | None:
    user = getattr(request, "user", None)
    # Only a user something already loaded: resolving a lazy user here would cost a
    # session and user query on requests that never needed one.
    if user is None or getattr(user, "_wrapped", None) is empty:
        return None
    if getattr(user, "is_authenticated", False):
        return str(user.pk)
    return None
