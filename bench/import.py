"""Benchmark: import 500 tools over 50 pages from a local SDK server, first and second time.

Run: ``.venv/bin/python bench/import.py [--rounds 5]`` (add DATABASE_URL=postgres://... for
PostgreSQL). It starts the official SDK server on 127.0.0.1, creates a throw-away test
database, and compares in the same run, alternating round by round:

- the bare catalogue walk (``McpClient.list_tools``: network only, no database), the floor;
- ``import_catalogue`` (bulk reconcile under a row lock);
- a naive peer: the same walk, then one ``update_or_create`` per tool.

Both importers also run on a replayed walk (the same 500 tool objects, no network), which
isolates the database work the walk would otherwise hide. Times are medians over the
rounds; ratios are against the bare walk, and for the replayed rows against ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext, override_settings  # noqa: E402

from nr_llm.catalogue import CatalogueClient, import_catalogue  # noqa: E402
from nr_llm.mcp import Endpoint  # noqa: E402
from nr_llm.mcp.protocol.names import local_name  # noqa: E402
from nr_llm.mcp.protocol.schema import normalise_schema  # noqa: E402
from nr_llm.models import DataClass, McpServer, McpTool  # noqa: E402
from nr_llm.servers.endpoints import endpoint_for, mcp_client  # noqa: E402
from tests.peers import sdk_server  # noqa: E402


class Replay:
    """A client answering with a catalogue fetched earlier: the import without the network."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools

    def list_tools(self, endpoint: Endpoint, on_page: Callable[[int, int], None] | None = None) -> list[Any]:
        return self.tools


def naive_import(server: McpServer, client: CatalogueClient | None = None) -> None:
    """The straightforward implementation: one upsert per tool."""
    for tool in (client or mcp_client()).list_tools(endpoint_for(server)):
        McpTool.objects.update_or_create(
            tool_name=local_name(server.identifier, tool["name"]),
            defaults={
                "server": server,
                "remote_name": tool["name"],
                "description": tool.get("description", ""),
                "input_schema": normalise_schema(tool["inputSchema"]),
            },
        )


def walk(server: McpServer) -> None:
    mcp_client().list_tools(endpoint_for(server))


def measure(action: Callable[[McpServer], Any], server: McpServer) -> tuple[float, int]:
    connection.queries_log.clear()  # the log is capped; keep each measurement's own queries
    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        action(server)
        elapsed = time.perf_counter() - started
    return elapsed * 1000, len(queries.captured_queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    old_name = connection.creation.create_test_db(verbosity=0)
    results: dict[str, list[tuple[float, int]]] = {}
    try:
        with (
            override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True),
            sdk_server("--stateless", "--extra-tools", "495", "--page-size", "10") as url,
        ):
            for round_ in range(args.rounds):
                server = McpServer.objects.create(
                    identifier=f"bench{round_}", name="bench", url=url, data_class=DataClass.PUBLIC_CONTENT
                )
                results.setdefault("bare walk (network only)", []).append(measure(walk, server))
                replay = Replay(mcp_client().list_tools(endpoint_for(server)))
                cases: list[tuple[str, Callable[[McpServer], Any]]] = [
                    ("import_catalogue", import_catalogue),
                    ("naive update_or_create", naive_import),
                    ("replayed: import_catalogue", partial(import_catalogue, client=replay)),
                    ("replayed: naive", partial(naive_import, client=replay)),
                ]
                for label, run in cases:
                    McpTool.objects.filter(server=server).delete()
                    for which in ("first", "second"):
                        results.setdefault(f"{label}: {which}", []).append(measure(run, server))
                    assert McpTool.objects.filter(server=server).count() == 500
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    floor = statistics.median(ms for ms, _ in results["bare walk (network only)"])
    print(f"500 tools over 50 pages, {args.rounds} rounds, database: {connection.vendor}\n")
    print(f"| {'case':<34} | {'median ms':>9} | {'queries':>7} | {'vs bare walk':>12} |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 9}|{'-' * 14}|")
    medians = {label: statistics.median(m for m, _ in samples) for label, samples in results.items()}
    for label, samples in results.items():
        queries = max(q for _, q in samples)
        ms = medians[label]
        print(f"| {label:<34} | {ms:>9.1f} | {queries:>7} | {ms / floor:>11.2f}x |")
    for which in ("first", "second"):
        ratio = medians[f"replayed: naive: {which}"] / medians[f"replayed: import_catalogue: {which}"]
        print(f"\nreplayed {which} import: naive / import_catalogue = {ratio:.1f}x", end="")
    print()


if __name__ == "__main__":
    main()
