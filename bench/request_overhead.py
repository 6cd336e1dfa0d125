"""Requests per second for a trivial view under gunicorn, with and without request completion.

Gunicorn servers (sync worker, one process each) run side by side on OS-chosen ports:

- ``bare``: plain Django;
- ``gunicorn-log``: plain Django plus gunicorn's own access log to a file (the peer: what
  a site already pays for one access line per request);
- ``emit``: DisconnectAwareWSGI + RequestCompletionMiddleware, access record and
  RequestEvent emitted through logging with no handler attached;
- ``full``: as ``emit``, both written as JSON lines to a file via BoundedQueueHandler.

Rounds alternate the order of the servers so drift on a shared machine hits all of them;
each figure is the median per-round ratio to ``bare``. Target: at most 3 % loss.

    .venv/bin/python -m bench.request_overhead [--rounds 7] [--seconds 3] [--clients 2]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from tests.peers import running

REQUEST = b"GET /ok/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
VARIANTS = ["bare", "gunicorn-log", "emit", "full"]


@contextlib.contextmanager
def server(variant: str, tmp: str) -> Iterator[int]:
    mode = "bare" if variant == "gunicorn-log" else variant
    access_log = os.path.join(tmp, "gunicorn-access.log")
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:tests.observability.gunicorn_conf",
        "--worker-class",
        "sync",
        *(["--access-logfile", access_log] if variant == "gunicorn-log" else []),
        "bench.wsgi:application",
    ]
    env = {
        "BENCH_MODE": mode,
        "BENCH_LOG": os.path.join(tmp, "events.jsonl"),
        "DJANGO_SETTINGS_MODULE": "bench.site",
    }
    with running(command, env=env) as port:
        yield port


def one_request(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(REQUEST)
        head = sock.recv(64)
        while sock.recv(65536):
            pass
    return head.startswith(b"HTTP/1.1 200")


def measure(port: int, seconds: float, clients: int) -> float:
    """Requests per second over ``seconds`` from ``clients`` concurrent connections."""
    done = [0] * clients
    failed: list[str] = []
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        while time.monotonic() < stop:
            if not one_request(port):
                failed.append("non-200")
                return
            done[index] += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    if failed:
        raise SystemExit(f"a request failed: {failed[0]}")
    return sum(done) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=2)
    args = parser.parse_args()
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        ports = {variant: stack.enter_context(server(variant, tmp)) for variant in VARIANTS}
        for port in ports.values():  # warm up: imports, URL resolver, first requests
            measure(port, 1.0, args.clients)
        for number in range(args.rounds):
            order = VARIANTS[number % len(VARIANTS) :] + VARIANTS[: number % len(VARIANTS)]
            rows.append({variant: measure(ports[variant], args.seconds, args.clients) for variant in order})
        jsonl = Path(tmp, "events.jsonl")
        lines = len(jsonl.read_bytes().splitlines()) if jsonl.exists() else 0
    print(
        f"gunicorn sync, 1 worker per server, {args.clients} clients, {args.seconds:g} s per server per round"
    )
    print(" | ".join(["round"] + [f"{variant:>12}" for variant in VARIANTS]) + "   (req/s)")
    for number, row in enumerate(rows, 1):
        print(" | ".join([f"{number:>5}"] + [f"{row[variant]:>12.0f}" for variant in VARIANTS]))
    print("\nvariant      | median ratio to bare | loss")
    for variant in VARIANTS[1:]:
        ratio = statistics.median(row[variant] / row["bare"] for row in rows)
        print(f"{variant:<12} | {ratio:>20.3f} | {1 - ratio:>5.1%}")
    print(f"\ntarget: full loses at most 3.0%; JSON lines written by the full server: {lines}")


if __name__ == "__main__":
    main()
