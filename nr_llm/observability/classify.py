"""Is this exception a client disconnect? Two signals, both required.

The request's signal must be aborted AND the exception must be the runtime's abort
error at top level, or the signal's exact ``reason`` object reached by walking
``__cause__``. Identity only: names, messages and errnos never decide, so an unrelated
``ConnectionResetError`` from an outbound call stays a server error. ``__context__`` is
never followed: an exception merely raised *while handling* a disconnect is a new
failure, not the disconnect.
"""

from __future__ import annotations

import asyncio

from django.core.exceptions import RequestAborted

from .signal import ClientDisconnected, DisconnectSignal

MAX_CAUSE_LINKS = 8
ABORT_ERRORS: tuple[type[BaseException], ...] = (asyncio.CancelledError, RequestAborted, ClientDisconnected)


def is_client_disconnect(exc: BaseException, signal: DisconnectSignal | None) -> bool:
    if signal is None or not signal.aborted:
        return False
    if isinstance(exc, ABORT_ERRORS):
        return True
    return reason_in_causes(exc, signal.reason)


def reason_in_causes(exc: BaseException, reason: BaseException | None) -> bool:
    """Whether ``reason`` is ``exc`` or within MAX_CAUSE_LINKS ``__cause__`` links of it."""
    if reason is None:
        return False
    seen: set[int] = set()
    current: BaseException | None = exc
    links = 0
    while current is not None and id(current) not in seen:
        if current is reason:
            return True
        if links == MAX_CAUSE_LINKS:
            return False
        seen.add(id(current))
        current = current.__cause__
        links += 1
    return False
