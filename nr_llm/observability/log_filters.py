"""Keep Django's request logs from repeating what the completion records."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from .completion import COMPLETION_KEY, Completion, access_level, access_logger
from .events import has_receiver
from .signal import signal_for, wrapper_state

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


class AccessRecordedFilter(logging.Filter):
    """Drop a WARNING-and-below record about a request that ``nr_llm.access`` records anyway.

    Django logs every 4xx response on ``django.request`` ("Not Found: /x"); with the access
    record on a handler too, a console shows each such request twice. Opt-in, on the
    ``django.request`` logger (docs/observability.md). Kept: ERROR records (a 5xx's traceback
    is what the access line lacks), and any record about a request no completion records (no
    wrapper or middleware saw it, or nothing listens to ``nr_llm.access`` at that level).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        request = getattr(record, "request", None)
        if not isinstance(request, HttpRequest):
            return True
        if not isinstance(wrapper_state(request, COMPLETION_KEY), Completion):
            return True
        status = getattr(record, "status_code", None)
        level = access_level(status) if isinstance(status, int) else logging.WARNING
        return not (access_logger.isEnabledFor(level) and has_receiver(access_logger, level))


def install() -> None:
    """Attach the disconnect filter once to each logger (idempotent, survives re-imports)."""
    for name in FILTERED_LOGGERS:
        target = logging.getLogger(name)
        if not any(isinstance(existing, ClientClosedFilter) for existing in target.filters):
            target.addFilter(ClientClosedFilter())
