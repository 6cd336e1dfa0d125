"""Benchmark: what a hostile server's answer costs the client in peak memory and time.

    .venv/bin/python -m bench.mcp_hostile_memory [--rounds 3] [--shapes NAME,...]

Each figure is one tool call in a fresh client process (tests/e2e/client_peak.py: a
warm-up call, malloc_trim, then the measured call; growth of the resident high-water
mark over the resident size before it). The peer is the same call against a
well-behaved server in the same run, so the table shows what the hostile answer adds.
The server is a separate process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.peers import ROOT, running  # noqa: E402
from tests.peers.hostile_wire import MEASURED  # noqa: E402

BUDGET = 5


def _run(base_url: str, scenarios: list[str]) -> list[dict[str, object]]:
    command = [sys.executable, "-m", "tests.e2e.client_peak", base_url, "call_tool", str(BUDGET), *scenarios]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shapes", default=",".join(MEASURED))
    args = parser.parse_args()
    cases = {"well-behaved (peer)": "fine/0"}
    cases.update({f"{shape} on initialize": f"leg/initialize/{shape}" for shape in args.shapes.split(",")})
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        base_url = f"http://127.0.0.1:{port}"
        rounds = [_run(base_url, list(cases.values())) for _ in range(args.rounds)]
    print(f"| answer | outcome | peak RSS growth (MiB, median of {args.rounds}) | seconds (median) |")
    print("|---|---|---:|---:|")
    for index, name in enumerate(cases):
        runs = [each[index] for each in rounds]
        growth = statistics.median(int(run["growth_kib"]) for run in runs) / 1024  # type: ignore[call-overload]
        seconds = statistics.median(float(run["seconds"]) for run in runs)  # type: ignore[arg-type]
        outcomes = "/".join(sorted({str(run["outcome"]) for run in runs}))
        print(f"| {name} | {outcomes} | {growth:.1f} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
