"""CPU per request of the request-completion path, in process, without a server or a network.

The gunicorn benchmark (``bench/request_overhead.py``) is the figure that counts; this one
isolates the part nr_llm adds, so a change to it can be measured and profiled in seconds.
One process builds three WSGI applications from the same settings and drives each with a
prepared environ (gunicorn's keys, a real connected socket for the liveness probe):

- ``bare``: Django's handler without ``RequestCompletionMiddleware``, not wrapped;
- ``installed``: ``DisconnectAwareWSGI`` + the middleware, nobody listening at INFO (no
  record is built);
- ``emit``: as ``installed``, both records built and handed to ``BoundedQueueHandler`` in
  front of a ``NullHandler`` (the request's share of event emission, the sink free);
- ``full``: as ``emit``, with a ``FileHandler`` writing JSON lines as the target; each
  round ends with ``flush()``, so the listener thread's formatting and writing are inside
  the measured CPU time.

Rounds alternate the order; each figure is the median over rounds of process CPU time
(all threads) per request, and its ratio to ``bare`` in the same round.

    .venv/bin/python -m bench.request_path [--rounds 7] [--requests 3000]
    .venv/bin/python -m bench.request_path --profile full   # cProfile of one variant
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import logging
import os
import pstats
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

os.environ["BENCH_MODE"] = "installed"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.site")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.test import override_settings  # noqa: E402

from nr_llm.observability.completion import ACCESS_LOGGER  # noqa: E402
from nr_llm.observability.events import REQUESTS_LOGGER  # noqa: E402
from nr_llm.observability.json_lines import JsonLinesFormatter  # noqa: E402
from nr_llm.observability.queue_handler import BoundedQueueHandler  # noqa: E402
from nr_llm.observability.wsgi import DisconnectAwareWSGI  # noqa: E402

VARIANTS = ["bare", "installed", "emit", "full"]
App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def applications() -> dict[str, App]:
    own = [entry for entry in settings.MIDDLEWARE if not entry.startswith("nr_llm.")]
    with override_settings(MIDDLEWARE=own):
        bare = WSGIHandler()
    wrapped = DisconnectAwareWSGI(WSGIHandler())
    return {"bare": bare, "installed": wrapped, "emit": wrapped, "full": wrapped}


@contextlib.contextmanager
def sink(path: Path, variant: str) -> Iterator[BoundedQueueHandler | None]:
    """Both completion loggers at INFO into the variant's handler (none for bare/installed)."""
    if variant not in ("emit", "full"):
        yield None
        return
    target = logging.FileHandler(path) if variant == "full" else logging.NullHandler()
    handler = BoundedQueueHandler(target)
    handler.setFormatter(JsonLinesFormatter())
    loggers = [logging.getLogger(ACCESS_LOGGER), logging.getLogger(REQUESTS_LOGGER)]
    for logger in loggers:
        logger.setLevel(logging.INFO)
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
            logger.setLevel(logging.NOTSET)
        handler.close()


def driver(app: App, client: socket.socket) -> Callable[[], None]:
    def start_response(status: str, headers: Any, exc_info: Any = None) -> Callable[[bytes], None]:
        if not status.startswith("200"):
            raise SystemExit(f"unexpected status {status}")
        return lambda data: None

    def one() -> None:
        environ = {
            "REQUEST_METHOD": "GET",
            "SCRIPT_NAME": "",
            "PATH_INFO": "/ok/",
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_CONNECTION": "close",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(b""),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "gunicorn.socket": client,
        }
        result = app(environ, start_response)
        for _chunk in result:
            pass
        close = getattr(result, "close", None)
        if close is not None:
            close()

    return one


def measure(one: Callable[[], None], requests: int, handler: BoundedQueueHandler | None) -> float:
    started = time.process_time()
    for _ in range(requests):
        one()
    if handler is not None:
        handler.flush()  # the listener's formatting and writing belong to these requests
    return (time.process_time() - started) / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--profile", choices=VARIANTS, help="print a cProfile of one variant instead")
    args = parser.parse_args()
    apps = applications()
    server_side, client = socket.socketpair()
    with server_side, client, tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp, "events.jsonl")
        drivers = {variant: driver(apps[variant], server_side) for variant in VARIANTS}
        if args.profile:
            with sink(jsonl, args.profile) as handler:
                measure(drivers[args.profile], 500, handler)
                profiler = cProfile.Profile()
                profiler.runcall(measure, drivers[args.profile], args.requests, handler)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
            return
        for variant in VARIANTS:  # warm up: imports, URL resolver, caches
            with sink(jsonl, variant) as handler:
                measure(drivers[variant], 500, handler)
        rows: list[dict[str, float]] = []
        for number in range(args.rounds):
            order = VARIANTS[number % len(VARIANTS) :] + VARIANTS[: number % len(VARIANTS)]
            row = {}
            for variant in order:
                with sink(jsonl, variant) as handler:
                    row[variant] = measure(drivers[variant], args.requests, handler)
            rows.append(row)
        lines = len(jsonl.read_bytes().splitlines())
    print(f"in process, {args.requests} requests per variant per round, {args.rounds} rounds")
    print("variant | cpu us/req (median) | ratio to bare (median, min-max) | extra us/req")
    for variant in VARIANTS:
        cpu = statistics.median(row[variant] for row in rows)
        ratios = [row[variant] / row["bare"] for row in rows]
        extra = statistics.median(row[variant] - row["bare"] for row in rows)
        spread = f"{min(ratios):.3f}-{max(ratios):.3f}"
        print(f"{variant:<7} | {cpu:>19.1f} | {statistics.median(ratios):>6.3f} ({spread}) | {extra:>12.1f}")
    # Two records (access + event) per request of the full variant, warm-up included.
    print(f"JSON lines written by full: {lines} (expected {2 * (args.rounds * args.requests + 500)})")


if __name__ == "__main__":
    main()
