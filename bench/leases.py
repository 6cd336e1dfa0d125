"""Benchmark: what a lease costs a call (governance/leases.py), uncontended, in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nrllm_bench_leases .venv/bin/python -m bench.leases
    .venv/bin/python -m bench.leases            # SQLite, a file

A throw-away test database (persistent connections, as a production site has them), one
server with "calls at once" set, and ``take`` + ``release`` back to back, as every call of
such a server pays them: a transaction that locks the server's row, deletes expired leases,
counts the live ones and inserts one; then one DELETE. Ms per call, median of rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--ops", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.db import connection

    connection.settings_dict["CONN_MAX_AGE"] = 60
    if connection.vendor == "sqlite":
        directory = tempfile.mkdtemp(prefix="nr-llm-leases-")
        connection.settings_dict["TEST"]["NAME"] = str(Path(directory) / "bench.sqlite3")
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from nr_llm.governance import leases
        from nr_llm.models import McpServer

        server = McpServer.objects.create(identifier="bench", name="Bench", max_concurrent_calls=4)
        takes: list[float] = []
        releases: list[float] = []
        for _ in range(args.rounds):
            took = gave = 0.0
            for _ in range(args.ops):
                started = time.perf_counter()
                lease = leases.take(
                    server.pk, "mcp_bench_echo", cap=4, alone=False, writes_alone=False, budget=20
                )
                taken = time.perf_counter()
                assert lease.pk is not None
                lease.release()
                took, gave = took + taken - started, gave + time.perf_counter() - taken
            takes.append(took / args.ops * 1000)
            releases.append(gave / args.ops * 1000)
        take, release = statistics.median(takes), statistics.median(releases)
        print(
            f"{connection.vendor}: take {take:.2f} ms + release {release:.2f} ms = {take + release:.2f} ms "
            f"per call (medians of {args.rounds} rounds of {args.ops})"
        )
    finally:
        from nr_llm.own_transaction import close_writers

        close_writers()
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
