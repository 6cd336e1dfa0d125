"""The site the overhead benchmark serves: one trivial view, with or without nr_llm's
request completion. ``BENCH_MODE``:

- ``bare``: plain Django, no wrapper, no middleware, no records;
- ``installed``: wrapper + middleware with the site's logging left alone: nobody listens
  to ``nr_llm.access`` / ``nr_llm.requests`` at INFO, so no record is built (what
  installing the package costs a site that has not configured a sink yet);
- ``emit``: as ``installed``, and both records built and handed to logging on every
  request: ``BoundedQueueHandler`` in front of a ``NullHandler``, so the request pays for
  building and queueing the records and the sink costs nothing;
- ``full``: as ``emit``, written as JSON lines to a file (the sink's own cost included);
- ``two-records``: the peer for emission: plain Django plus two bare stdlib records per
  request to a ``NullHandler`` (``bench/peer_records.py``), no nr_llm at all.
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
WRAPPED = MODE in ("installed", "emit", "full")
LISTENED = MODE in ("emit", "full")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "bench.site"
NR_LLM_REQUEST_EVENTS = {"include_cancelled": True}

if not WRAPPED:
    MIDDLEWARE = [entry for entry in MIDDLEWARE if not entry.startswith("nr_llm.")]
if MODE == "two-records":
    MIDDLEWARE = [*MIDDLEWARE, "bench.peer_records.TwoRecordsMiddleware"]

_target = (
    {"class": "logging.FileHandler", "filename": os.environ.get("BENCH_LOG", os.devnull)}
    if MODE == "full"
    else {"class": "logging.NullHandler"}
)
_sink = {
    "()": "nr_llm.observability.queue_handler.BoundedQueueHandler",
    "target": _target,
    "formatter": "jsonl",
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"jsonl": {"()": "nr_llm.observability.json_lines.JsonLinesFormatter"}},
    "handlers": {"null": {"class": "logging.NullHandler"}, **({"sink": _sink} if LISTENED else {})},
    "loggers": {
        "nr_llm.access": {"handlers": ["sink"], "level": "INFO", "propagate": False},
        "nr_llm.requests": {"handlers": ["sink"], "level": "INFO", "propagate": False},
    }
    if LISTENED
    else {"bench.peer": {"handlers": ["null"], "level": "INFO", "propagate": False}},
}


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def cpu(request: HttpRequest) -> HttpResponse:
    """CPU seconds this worker process (all its threads) has used so far."""
    return HttpResponse(repr(time.process_time()))


urlpatterns = [path("ok/", ok), path("cpu/", cpu)]
