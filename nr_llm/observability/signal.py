"""The per-request disconnect signal (seed 003): ``aborted``, ``reason``, ``phase``.

The HTTP wrappers (``wsgi.py``, ``asgi.py``) own one signal per request and abort it on
transport evidence only: EOF before Content-Length, a connection reset, an ASGI
``http.disconnect`` before the response completed, or an empty read on the client socket.
The first reason wins and is never replaced, so every layer that re-raises it raises the
very same object, which is what the classifier matches by identity.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from django.http import HttpRequest

# The WSGI environ / ASGI scope key the wrappers put the signal under. Django copies
# the environ into ``request.META`` and keeps the scope as ``request.scope``.
SIGNAL_KEY = "nr_llm.disconnect_signal"

# One lock for every signal: an abort is rare, and a lock allocated per request is a
# measurable share of a trivial one (bench/request_path.py). It only orders the first
# reason against a concurrent second one.
_ABORT_LOCK = threading.Lock()


class ClientDisconnected(ConnectionError):
    """The client went away before the request completed.

    The one canonical disconnect error: a transport failure is chained as its
    ``__cause__``; EOF before Content-Length has no cause.
    """


class Phase(enum.StrEnum):
    """Where the request was when the client left."""

    REQUEST_BODY = "request_body"
    HANDLER = "handler"
    RESPONSE = "response"


class DisconnectSignal:
    """Aborted once, with the first reason and the phase it happened in."""

    __slots__ = ("_phase", "_probe", "_reason", "response_started")

    def __init__(self, probe: Callable[[], BaseException | None] | None = None) -> None:
        self._reason: BaseException | None = None
        self._phase: Phase | None = None
        # Set by a wrapper that can ask the transport whether the client is still
        # there (WSGI: a non-blocking peek at the socket); None where it cannot.
        self._probe = probe
        self.response_started = False

    @property
    def aborted(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> BaseException | None:
        return self._reason

    @property
    def phase(self) -> Phase | None:
        return self._phase

    def abort(self, reason: BaseException, phase: Phase) -> BaseException:
        """Record the disconnect; return the reason that won (the first one)."""
        with _ABORT_LOCK:
            if self._reason is None:
                self._reason = reason
                self._phase = phase
            return self._reason

    def check(self, phase: Phase | None = None) -> bool:
        """Return ``aborted``, first asking the transport when the wrapper can.

        Evidence found here is recorded in ``phase``, by default the handler's (the
        response's once it started).
        """
        if self._reason is None and self._probe is not None:
            evidence = self._probe()
            if evidence is not None:
                if phase is None:
                    phase = Phase.RESPONSE if self.response_started else Phase.HANDLER
                self.abort(evidence, phase)
        return self.aborted

    def raise_if_aborted(self) -> None:
        """Raise the canonical reason if the client has gone (for long-running views)."""
        if self.check():
            self.raise_reason()

    def raise_reason(self) -> NoReturn:
        """Raise the reason again, keeping its own cause (it must stay the same object)."""
        reason = self._reason
        if reason is None:
            raise RuntimeError("the signal is not aborted")
        raise reason from reason.__cause__

    def __repr__(self) -> str:
        state = f"aborted in {self._phase}" if self._reason is not None else "active"
        return f"<DisconnectSignal {state}>"


def wrapper_state(request: HttpRequest, key: str) -> object | None:
    """What a wrapper stored under ``key``: WSGI environ keys reach ``request.META``,
    ASGI scope keys stay in ``request.scope``."""
    found = request.META.get(key)
    if found is None:
        scope = getattr(request, "scope", None)
        found = scope.get(key) if isinstance(scope, dict) else None
    return found


def signal_for(request: HttpRequest) -> DisconnectSignal | None:
    """The request's signal, or None when no wrapper runs in front of Django."""
    found = wrapper_state(request, SIGNAL_KEY)
    return found if isinstance(found, DisconnectSignal) else None
