"""The site the overhead benchmark serves: one trivial view, with or without nr_llm's
request completion. ``BENCH_MODE``:

- ``bare``: plain Django, no wrapper, no middleware, no records;
- ``emit``: wrapper + middleware; access records and events emitted, no handler attached;
- ``full``: as ``emit``, both written as JSON lines to a file through BoundedQueueHandler.
"""

import os
import time

os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789abcdef")
os.environ.setdefault("DATABASE_URL", "sqlite://:memory:")

from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

from project.settings import *  # noqa: E402,F403
from project.settings import MIDDLEWARE  # noqa: E402

MODE = os.environ.get("BENCH_MODE", "bare")
WRAPPED = MODE in ("emit", "full")
FULL = MODE == "full"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "bench.site"
NR_LLM_REQUEST_EVENTS = {"include_cancelled": True}

if not WRAPPED:
    MIDDLEWARE = [entry for entry in MIDDLEWARE if not entry.startswith("nr_llm.")]

_sink = {
    "()": "nr_llm.observability.queue_handler.BoundedQueueHandler",
    "target": {"class": "logging.FileHandler", "filename": os.environ.get("BENCH_LOG", os.devnull)},
    "formatter": "jsonl",
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"jsonl": {"()": "nr_llm.observability.json_lines.JsonLinesFormatter"}},
    "handlers": {"sink": _sink} if FULL else {},
    "loggers": {
        "nr_llm.access": {"handlers": ["sink"] if FULL else [], "level": "INFO", "propagate": False},
        "nr_llm.requests": {"handlers": ["sink"] if FULL else [], "level": "INFO", "propagate": False},
    },
}


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def cpu(request: HttpRequest) -> HttpResponse:
    """CPU seconds this worker process (all its threads) has used so far."""
    return HttpResponse(repr(time.process_time()))


urlpatterns = [path("ok/", ok), path("cpu/", cpu)]
