"""Keep Django's request logs from repeating what the completion records."""

from __future__ import annotations

import logging

from django.http import HttpRequest

from .completion import COMPLETION_KEY, Completion, access_level, access_logger
from .events import has_receiver
from .signal import signal_for, wrapper_state

# A disconnect mid-upload makes CSRF log a 403 "CSRF token missing".
FILTERED_LOGGERS = ("django.security.csrf", "django.request")


class ClientClosedFilter(logging.Filter):
    """Drop warnings about a request whose client left; errors stay, they are the server's."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        request = getattr(record, "request", None)
        if not isinstance(request, HttpRequest):
            return True
        signal = signal_for(request)
        return signal is None or not signal.aborted


class AccessRecordedFilter(logging.Filter):
    """Drop warnings that ``nr_llm.access`` records anyway, so a console shows a 4xx once.

    Opt-in (docs/observability.md). Errors stay: the access line lacks a 5xx's traceback.
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
