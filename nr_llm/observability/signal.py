"""The per-request disconnect signal, aborted by the HTTP wrappers on transport evidence only.

The first reason wins, so every layer re-raises the same object and the classifier can match
it by identity.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from django.http import HttpRequest

SIGNAL_KEY = "nr_llm.disconnect_signal"

# Shared: aborts are rare, and a lock per request was measurable (bench/request_path.py).
_ABORT_LOCK = threading.Lock()


class ClientDisconnected(ConnectionError):
    """The one disconnect error; a transport failure is chained as its ``__cause__``."""


class Phase(enum.StrEnum):
    REQUEST_BODY = "request_body"
    HANDLER = "handler"
    RESPONSE = "response"


class DisconnectSignal:
    """Aborted once, with the first reason and the phase it happened in."""

    __slots__ = ("_phase", "_probe", "_reason", "response_started")

    def __init__(self, probe: Callable[[], BaseException | None] | None = None) -> None:
        self._reason: BaseException | None = None
        self._phase: Phase | None = None
        # None where the wrapper cannot ask whether the client is still there.
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
        """Return ``aborted``, first asking the transport when the wrapper can."""
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
        """Raise the same object, keeping its own cause."""
        reason = self._reason
        if reason is None:
            raise RuntimeError("the signal is not aborted")
        raise reason from reason.__cause__

    def __repr__(self) -> str:
        state = f"aborted in {self._phase}" if self._reason is not None else "active"
        return f"<DisconnectSignal {state}>"


def wrapper_state(request: HttpRequest, key: str) -> object | None:
    """What a wrapper stored under ``key``, in the WSGI environ or the ASGI scope."""
    found = request.META.get(key)
    if found is None:
        scope = getattr(request, "scope", None)
        found = scope.get(key) if isinstance(scope, dict) else None
    return found


def signal_for(request: HttpRequest) -> DisconnectSignal | None:
    """The request's signal, or None when no wrapper runs in front of Django."""
    found = wrapper_state(request, SIGNAL_KEY)
    return found if isinstance(found, DisconnectSignal) else None
