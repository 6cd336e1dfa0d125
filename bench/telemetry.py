"""Benchmark: what OpenTelemetry costs a tool call, in one run.

    .venv/bin/python -m bench.telemetry [--rounds 7] [--ops 200]

The client's CPU time (``time.process_time``) of warm ``McpClient.call_tool`` against the
official SDK server (tests/peers/sdk_server.py, stateless, loopback), round by round in three
modes so all see the same machine load:

- the floor: the client as it runs without the API installed (the decorators hand back
  the plain functions: ``Transport.post`` and ``OAuthLegs._leg`` undecorated);
- the API alone, no SDK: the site installed the ``otel`` extra but configured nothing (the
  API's no-op tracer and meter);
- the SDK recording: a TracerProvider exporting to memory and a MeterProvider with a reader
  (what an exporter then does with the spans is the site's cost, not measured here).

Modes take turns in each round, starting with a different one each time. Then the
execute_tool decorator alone, around a function that returns at once, in the last two
modes (µs per call): the overhead an ``execute()`` pays on top of its ledger writes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opentelemetry import trace  # noqa: E402
from opentelemetry.metrics import _internal as metrics_globals  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient  # noqa: E402
from nr_llm.mcp.protocol.transport import Transport  # noqa: E402
from tests.peers import sdk_server  # noqa: E402

MODES = ("floor (no API)", "API, no SDK", "SDK recording")


@contextmanager
def mode(name: str) -> Iterator[InMemorySpanExporter | None]:
    """Install what ``name`` runs with; put the process back as it was afterwards."""
    decorated = Transport.post
    exporter: InMemorySpanExporter | None = None
    if name == MODES[0]:
        Transport.post = decorated.__wrapped__  # type: ignore[attr-defined,method-assign]
    if name == MODES[2]:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace._TRACER_PROVIDER = provider
        metrics_globals._METER_PROVIDER = MeterProvider(metric_readers=[InMemoryMetricReader()])
    try:
        yield exporter
    finally:
        Transport.post = decorated  # type: ignore[method-assign]
        trace._TRACER_PROVIDER = None
        metrics_globals._METER_PROVIDER = None


def calls(url: str, ops: int) -> float:
    """This process's CPU seconds for ``ops`` warm calls: the client's own work, which is what
    telemetry adds to, apart from the server's (another process) and the shared machine's load,
    which swamp a wall-clock comparison on a busy machine."""
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    endpoint = Endpoint(identifier="bench", url=url)
    started = time.process_time()
    for _ in range(ops):
        assert client.call_tool(endpoint, "echo", {"text": "hi"}).text == "hi"
    return time.process_time() - started


def decorator_only(ops: int) -> float:
    """Seconds for ``ops`` calls of an execute_tool-decorated function that returns at once."""
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from nr_llm.tools import ToolResult, telemetry

    answer = ToolResult("ok", False, "bench")

    @telemetry.traced("execute")
    def execute(name: str, arguments: Any = None, *, tool_call_id: str | None = None) -> ToolResult:
        return answer

    started = time.process_time()
    for _ in range(ops):
        execute("mcp_bench_echo", {}, tool_call_id="call_1")
    return time.process_time() - started


def measure(rounds: int, work: Callable[[], float], modes: tuple[str, ...]) -> dict[str, list[float]]:
    seconds: dict[str, list[float]] = {name: [] for name in modes}
    for round_ in range(rounds):
        # Each round starts with another mode: none always runs first (or last) in a round.
        shift = round_ % len(modes)
        for name in modes[shift:] + modes[:shift]:
            with mode(name) as exporter:
                seconds[name].append(work())
                if exporter is not None:
                    assert exporter.get_finished_spans(), "the SDK mode recorded nothing"
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=200)
    options = parser.parse_args()
    with sdk_server("--stateless") as url:
        calls(url, 20)  # warm: the era learnt, a connection kept
        seconds = measure(options.rounds, lambda: calls(url, options.ops), MODES)
    floor = statistics.median(seconds[MODES[0]]) / options.ops
    print(f"Warm tool calls, {options.rounds} rounds x {options.ops} calls (median of rounds)")
    print(f"{'mode':<18} {'client CPU µs/call':>19} {'vs floor':>9} {'µs added':>9}")
    for name in MODES:
        per_call = statistics.median(seconds[name]) / options.ops
        added = (per_call - floor) * 1e6
        print(f"{name:<18} {per_call * 1e6:>19.1f} {per_call / floor:>8.3f}x {added:>9.1f}")
    ops = options.ops * 50
    alone = measure(options.rounds, lambda: decorator_only(ops), MODES[1:])
    print(f"\nThe execute_tool decorator alone, {ops} calls per round")
    print(f"{'mode':<18} {'CPU µs/call':>12}")
    for name in MODES[1:]:
        print(f"{name:<18} {statistics.median(alone[name]) / ops * 1e6:>12.2f}")


if __name__ == "__main__":
    main()
