"""Keep a disconnect's side effects out of Django's request logs."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from .signal import signal_for

# The loggers Django writes a request's 4xx warnings to, among them CSRF's 403
# "CSRF token missing" that a mid-upload disconnect produces.
FILTERED_LOGGERS = ("django.security.csrf", "django.request")


class ClientClosedFilter(logging.Filter):
    """Drop WARNING-and-below records about a request whose client already left.

    ERROR records stay: an unclassified exception is a server error whatever the client
    did, and it must be seen.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        request = getattr(record, "request", None)
        if not isinstance(request, HttpRequest):
            return True
        signal = signal_for(request)
        return signal is None or not signal.aborted


def install() -> None:
    """Attach the filter once to each logger (idempotent, survives re-imports)."""
    for name in FILTERED_LOGGERS:
        target = logging.getLogger(name)
        if not any(isinstance(existing, ClientClosedFilter) for existing in target.filters):
            target.addFilter(ClientClosedFilter())
