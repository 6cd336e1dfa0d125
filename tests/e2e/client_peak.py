"""MCP operations, each in a fresh process, and what each cost: outcome, wall time and
peak memory growth.

    python -m tests.e2e.client_peak BASE_URL OPERATION BUDGET SCENARIO...

prints one JSON line per scenario, in order: ``scenario``, ``outcome`` (``ok``,
``error:<kind>``, ``report:unreachable`` for a failed ping, or ``exception:<type>`` for
anything that is not McpTransportError), ``seconds`` and ``growth_kib``.

The peak is the process's resident high-water mark (``ru_maxrss``), which only ever
rises, so the measured operation must be the only one in its process that could raise
it: a well-behaved warm-up call first pays for the lazy imports and first-use caches
any first operation pays, then ``malloc_trim`` returns freed memory, and the growth is
the mark after the operation minus the resident size right before it (not minus the
old mark, which would hide growth below the warm-up's peak). The server runs in another
process; none of its buffers count. Each measuring process is forked from this one
(see ``main``).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time
import traceback

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError

CREDENTIAL = "tok-peak-5e4d3c2b1a"


def _resident_kib() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def _operation(client: McpClient, endpoint: Endpoint, operation: str) -> str:
    if operation == "ping":
        # ping reports a failure instead of raising it.
        return "ok" if client.ping(endpoint).reachable else "report:unreachable"
    if operation == "list_tools":
        client.list_tools(endpoint)
    else:
        client.call_tool(endpoint, "echo")
    return "ok"


def measure(base_url: str, scenario: str, operation: str, budget: float) -> dict[str, object]:
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))

    def endpoint(path: str) -> Endpoint:
        return Endpoint(
            identifier="hostile",
            url=f"{base_url}/{path}/mcp",
            budget_seconds=budget,
            credential=CREDENTIAL,
            auth_placement="bearer",
        )

    client.call_tool(endpoint("fine/0"), "echo")  # the warm-up
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    before = _resident_kib()
    started = time.monotonic()
    try:
        outcome = _operation(client, endpoint(scenario), operation)
    except McpTransportError as exc:
        outcome = f"error:{exc.kind}"
    except Exception as exc:  # the point: report any other type instead of dying with it
        outcome = f"exception:{type(exc).__name__}"
    seconds = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"outcome": outcome, "seconds": round(seconds, 3), "growth_kib": max(peak - before, 0)}


def main() -> None:
    base_url, operation, budget, *scenarios = sys.argv[1:]
    # One forked child per operation, so that each starts its own high-water mark. Not
    # this process itself: Linux carries ru_maxrss across exec, so a process started from
    # the test runner begins with the runner's mark, which would hide any growth below
    # it; a child forked from this small process (which has run no client code, so no
    # thread exists to fork) begins at this process's size instead.
    for scenario in scenarios:
        pid = os.fork()
        if pid == 0:
            # os._exit: the child must not go on with the parent's loop or exit handlers.
            try:
                result = measure(base_url, scenario, operation, float(budget))
                print(json.dumps({"scenario": scenario, **result}), flush=True)
            except BaseException:
                traceback.print_exc()
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if status:
            sys.exit(f"measuring {scenario} failed")


if __name__ == "__main__":
    main()
