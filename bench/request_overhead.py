"""Requests per second for a trivial view under gunicorn, with and without request completion.

Gunicorn servers (sync worker, one process each) run side by side on OS-chosen ports:

- ``bare``: plain Django;
- ``gunicorn-log``: plain Django plus gunicorn's own access log to a file (the peer: what
  a site already pays for one access line per request);
- ``installed``: DisconnectAwareWSGI + RequestCompletionMiddleware, the site's logging
  left alone (nobody listens to the completion loggers at INFO, so no record is built);
- ``emit``: as ``installed``, and the access record and RequestEvent built and handed to
  logging on every request (BoundedQueueHandler in front of a NullHandler: the sink
  itself costs nothing);
- ``full``: as ``emit``, both written as JSON lines to a file (the sink's cost included);
- ``two-records``: the peer for emission: plain Django plus two bare stdlib records per
  request handed to a ``NullHandler`` (``bench/peer_records.py``), no nr_llm at all.

Rounds alternate the order of the servers so drift on a shared machine hits all of them;
each figure is the median per-round ratio to ``bare``. Throughput on a shared 2-core
machine is noisy, so each round also reads the worker's own CPU time (``/cpu/``, all its
threads) before and after: CPU microseconds per request is the steadier figure. With two
CPUs or more, the servers are pinned to one and the clients to another (``--no-pin`` to
leave placement to the scheduler).
Target: at most 3 % loss for the wrappers, middleware and event emission.

    .venv/bin/python -m bench.request_overhead [--rounds 7] [--seconds 3] [--clients 2] [--no-pin]
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
CPU = b"GET /cpu/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
VARIANTS = ["bare", "gunicorn-log", "two-records", "installed", "emit", "full"]


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


def fetch(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def one_request(port: int) -> bool:
    return fetch(port, REQUEST).startswith(b"HTTP/1.1 200")


def worker_cpu(port: int) -> float:
    return float(fetch(port, CPU).partition(b"\r\n\r\n")[2])


def measure(port: int, seconds: float, clients: int) -> tuple[float, float, int]:
    """Requests per second over ``seconds`` from ``clients`` concurrent connections, the
    worker's CPU microseconds per request, and the requests served (the two /cpu/ included)."""
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
    cpu_before = worker_cpu(port)
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 30)
    elapsed = time.monotonic() - started
    cpu_used = worker_cpu(port) - cpu_before
    if failed:
        raise SystemExit(f"a request failed: {failed[0]}")
    return sum(done) / elapsed, cpu_used / sum(done) * 1e6, sum(done) + 2


def pin_plan() -> tuple[int, int] | None:
    """(server CPU, client CPU) when there are two to spare, else None.

    Only one server is busy at a time; on a shared CPU the scheduler moves the worker and
    the clients around each other, and that noise is of the size of the effect measured.
    """
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[-1], cpus[0]) if len(cpus) >= 2 else None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument(
        "--no-pin", action="store_true", help="let the scheduler place servers and clients anywhere"
    )
    args = parser.parse_args()
    pinned = None if args.no_pin else pin_plan()
    rows: list[dict[str, tuple[float, float, int]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        with contextlib.ExitStack() as stack:
            if pinned is not None:
                # Children inherit the mask at fork: every server runs on its own CPU...
                os.sched_setaffinity(0, {pinned[0]})
            ports = {variant: stack.enter_context(server(variant, tmp)) for variant in VARIANTS}
            if pinned is not None:
                # ...and the clients on another, so neither preempts the other.
                os.sched_setaffinity(0, {pinned[1]})
            # Warm up: imports, URL resolver, first requests.
            warm = {variant: measure(port, 1.0, args.clients) for variant, port in ports.items()}
            for number in range(args.rounds):
                order = VARIANTS[number % len(VARIANTS) :] + VARIANTS[: number % len(VARIANTS)]
                rows.append(
                    {variant: measure(ports[variant], args.seconds, args.clients) for variant in order}
                )
            served_full = warm["full"][2] + sum(row["full"][2] for row in rows)
        # After the servers stopped: the queue handler delivers the rest when it closes.
        jsonl = Path(tmp, "events.jsonl")
        lines = len(jsonl.read_bytes().splitlines()) if jsonl.exists() else 0
    placement = f"servers on CPU {pinned[0]}, clients on CPU {pinned[1]}" if pinned else "not pinned"
    print(
        f"gunicorn sync, 1 worker per server, {args.clients} clients, {args.seconds:g} s per server"
        f" per round, {placement}"
    )
    print(" | ".join(["round"] + [f"{variant:>19}" for variant in VARIANTS]))
    print(" | ".join(["     "] + [f"{'req/s  cpu us/req':>19}" for _ in VARIANTS]))
    for number, row in enumerate(rows, 1):
        cells = [f"{row[variant][0]:>8.0f} {row[variant][1]:>10.1f}" for variant in VARIANTS]
        print(" | ".join([f"{number:>5}", *cells]))
    print(
        "\nmedians over rounds of the per-round ratio to bare (min-max in brackets)\n"
        "variant      | req/s ratio to bare (spread) | loss   |"
        " cpu/req ratio to bare (spread) | extra cpu us/req"
    )
    for variant in VARIANTS[1:]:
        rates = [row[variant][0] / row["bare"][0] for row in rows]
        costs = [row[variant][1] / row["bare"][1] for row in rows]
        rate, cost = statistics.median(rates), statistics.median(costs)
        extra = statistics.median(row[variant][1] - row["bare"][1] for row in rows)
        print(
            f"{variant:<12} | {rate:>6.3f} ({min(rates):.3f}-{max(rates):.3f}) | {1 - rate:>6.1%} |"
            f" {cost:>8.3f} ({min(costs):.3f}-{max(costs):.3f})   | {extra:>16.1f}"
        )
    bare_cpu = statistics.median(row["bare"][1] for row in rows)
    print(
        f"\ntarget: at most 3.0% loss (about {0.03 * bare_cpu:.0f} cpu us/req of bare's {bare_cpu:.0f})"
        f"\nJSON lines written by the full server: {lines} (2 per request: {2 * served_full})"
    )


if __name__ == "__main__":
    main()
