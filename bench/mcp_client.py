"""Benchmark: nr_llm's MCP client against the official Python SDK client, in one run.

    .venv/bin/python -m bench.mcp_client [--rounds 5] [--ops 40]

Starts the official SDK 2.3 server (tests/peers/sdk_server.py) on 127.0.0.1 and measures
full tool-call operations per second, ours and the SDK client's, alternating round by round
so both see the same machine load:

- 2026-07-28 era: the SDK server in its default configuration (and stateless/JSON); the SDK's
  ``Client(url)`` in auto mode, a fresh client per operation as the app makes one (discover,
  then the call), against ours (the era remembered: one POST per call). Target: 10x, 1 POST.
- handshake era: the same server answering ``server/discover`` with -32601 (``--no-discover``),
  so ours falls back to initialize, initialized, the call and DELETE, against the SDK's
  ``ClientSession`` with ``initialize()``;
- a 500-tool catalogue walk (50 pages of 10) in the handshake era.

Prints ratios, not absolute targets: the numbers only mean something against the peer in the
same run. "requests per op" is counted by the server (every HTTP request it received).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient  # noqa: E402
from tests.peers import sdk_server  # noqa: E402


class CountingSessions:
    """A session factory that counts every HTTP request our client sends."""

    def __init__(self) -> None:
        self.requests = 0

    def __call__(self) -> requests.Session:
        session = requests.Session()
        session.trust_env = False
        session.hooks["response"].append(self._count)
        return session

    def _count(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.requests += 1


def server_requests(url: str) -> int:
    return len(requests.get(url.replace("/mcp", "/requests"), timeout=10).json())


def sdk_auto_calls(url: str, ops: int) -> None:
    """The SDK 2.3 Client in auto mode (discover, fall back to initialize), fresh per call."""

    async def run() -> None:
        from mcp.client.client import Client

        for _ in range(ops):
            async with Client(url) as client:
                result = await client.call_tool("echo", {"text": "hi"})
                assert getattr(result.content[0], "text", None) == "hi"

    asyncio.run(run())


def ours_calls(url: str, ops: int, sessions: CountingSessions) -> None:
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), session_factory=sessions)
    endpoint = Endpoint(identifier="bench", url=url)
    for _ in range(ops):
        assert client.call_tool(endpoint, "echo", {"text": "hi"}).text == "hi"


def ours_walk(url: str, sessions: CountingSessions) -> int:
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), session_factory=sessions)
    return len(client.list_tools(Endpoint(identifier="bench", url=url)))


async def _sdk_session(url: str, work: Callable[[Any], Any]) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        return await work(session)


def sdk_calls(url: str, ops: int) -> None:
    async def run() -> None:
        for _ in range(ops):
            result = await _sdk_session(url, lambda session: session.call_tool("echo", {"text": "hi"}))
            assert result.content[0].text == "hi"

    asyncio.run(run())


def sdk_walk(url: str) -> int:
    async def walk(session: Any) -> int:
        from mcp_types import PaginatedRequestParams

        count, cursor = 0, None
        while True:
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            count += len(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return count

    return asyncio.run(_sdk_session(url, walk))  # type: ignore[no-any-return]


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _measure(
    url: str, rounds: int, ops: int, ours: Callable[[], Any], sdk: Callable[[], Any]
) -> tuple[Any, ...]:
    """Alternate the two clients round by round; ops/s medians and server requests per op each."""
    ours_rates: list[float] = []
    sdk_rates: list[float] = []
    ours_requests = sdk_requests = 0
    for _ in range(rounds):
        before = server_requests(url)
        ours_rates.append(ops / timed(ours)[0])
        middle = server_requests(url)
        sdk_rates.append(ops / timed(sdk)[0])
        ours_requests += middle - before
        sdk_requests += server_requests(url) - middle
    per_op = rounds * ops
    return (
        statistics.median(ours_rates),
        statistics.median(sdk_rates),
        ours_requests / per_op,
        sdk_requests / per_op,
    )


def bench_modern(mode: str, rounds: int, ops: int) -> list[str]:
    args = ["--stateless"] if mode == "stateless" else []
    with sdk_server(*args) as url:
        ours_calls(url, 3, CountingSessions())  # warm both paths; ours learns the era here
        sdk_auto_calls(url, 3)
        ours_ops, sdk_ops, ours_per, sdk_per = _measure(
            url,
            rounds,
            ops,
            lambda: ours_calls(url, ops, CountingSessions()),
            lambda: sdk_auto_calls(url, ops),
        )
    return [
        f"| tool call, 2026-07-28, SDK server {mode} (SDK `Client(url)` auto) | {ours_ops:8.1f} ops/s "
        f"| {sdk_ops:8.1f} ops/s | {ours_ops / sdk_ops:5.2f}x | {ours_per:.1f} | {sdk_per:.1f} |"
    ]


def bench_calls(mode: str, rounds: int, ops: int) -> list[str]:
    args = ["--stateless"] if mode == "stateless" else []
    with sdk_server("--no-discover", *args) as url:
        ours_calls(url, 3, CountingSessions())  # warm both paths (imports, server caches, the era)
        sdk_calls(url, 3)
        ours_ops, sdk_ops, ours_per, sdk_per = _measure(
            url,
            rounds,
            ops,
            lambda: ours_calls(url, ops, CountingSessions()),
            lambda: sdk_calls(url, ops),
        )
    return [
        f"| tool call, handshake era, SDK server {mode} (SDK `ClientSession`) | {ours_ops:8.1f} ops/s "
        f"| {sdk_ops:8.1f} ops/s | {ours_ops / sdk_ops:5.2f}x | {ours_per:.1f} | {sdk_per:.1f} |"
    ]


def bench_walk(mode: str, rounds: int) -> list[str]:
    args = ["--stateless"] if mode == "stateless" else []
    sessions = CountingSessions()
    ours: list[float] = []
    sdk: list[float] = []
    with sdk_server("--no-discover", *args, "--extra-tools", "495", "--page-size", "10") as url:
        assert ours_walk(url, CountingSessions()) == sdk_walk(url) == 500
        for _ in range(rounds):
            ours.append(timed(lambda: ours_walk(url, sessions))[0])
            sdk.append(timed(lambda: sdk_walk(url))[0])
    ours_s, sdk_s = statistics.median(ours), statistics.median(sdk)
    return [
        f"| 500-tool walk (50 pages), handshake era, SDK server {mode} "
        f"| {ours_s * 1000:8.1f} ms | {sdk_s * 1000:8.1f} ms "
        f"| {sdk_s / ours_s:5.2f}x | {sessions.requests / rounds:.0f} | |"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per measurement (median)")
    parser.add_argument("--ops", type=int, default=40, help="operations per round")
    args = parser.parse_args()
    rows = ["| measurement | nr_llm | official SDK client | ours vs SDK | our requests per op | SDK's |"]
    rows.append("|---|---:|---:|---:|---:|---:|")
    for mode in ("default", "stateless"):
        rows += bench_modern(mode, args.rounds, args.ops)
    for mode in ("stateless", "stateful"):
        rows += bench_calls(mode, args.rounds, args.ops)
    for mode in ("stateful", "stateless"):
        rows += bench_walk(mode, max(1, args.rounds // 2))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
