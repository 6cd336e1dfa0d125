"""Benchmark: warm tool calls over a simulated wide-area TLS link, in one run.

    .venv/bin/python -m bench.wan [--delay-ms 20] [--rounds 5] [--ops 20]

A local TLS server (the official SDK 2.x server under uvicorn, tests/peers/sdk_server.py, with a
trustme certificate for ``mcp.test``) behind a latency proxy on 127.0.0.1 that delays every
chunk D ms each way (a round trip of 2D; a new connection's first bytes wait one more round trip,
the TCP handshake the proxy's local accept does not cost). Compared round by round, so all see
the same machine load:

- nr_llm, warm: the app's client, connections kept (the default idle limit);
- nr_llm, reuse off: ``keepalive_seconds=0`` (``NR_LLM_MCP_KEEPALIVE_SECONDS=0``);
- the SDK 2.x ``Client``, a new one per call as an app makes one per operation (its transport
  as ``Client(url)`` builds it, with an httpx client trusting the test CA and dialling the
  proxy for the name);
- the floor: one POST per call on a kept-alive ``requests`` session (the 2026-era tools/call
  JSON-RPC request, nothing else), the least any client can spend.

Both eras: the 2026-07-28 server, and the same server refusing ``server/discover``
(``--no-discover``: initialize, initialized, the call, DELETE). Ms per call (median of rounds),
connections and requests per call counted by the proxy and the server. ``--loopback`` skips
the proxy (the loopback target). The host lookup's cost is measured too (the system resolver for
``localhost``, and the gate's thread around it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import ssl
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient  # noqa: E402
from nr_llm.mcp.wire.hostgate import resolve, system_resolver  # noqa: E402
from nr_llm.mcp.wire.pool import DEFAULT_KEEPALIVE_SECONDS, process_pool  # noqa: E402
from tests.peers.named import named_session  # noqa: E402
from tests.tls import TestAuthority, sdk_server_tls  # noqa: E402

NAME = "mcp.test"
TOOL = "echo"
ARGUMENTS: dict[str, Any] = {"text": "hi"}
CALL: dict[str, Any] = {"name": TOOL, "arguments": ARGUMENTS}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "floor", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class LatencyProxy:
    """TCP on 127.0.0.1 to ``upstream``, each chunk delivered ``delay`` seconds after it came
    (order kept, no bandwidth limit); a connection's first client bytes wait one round trip
    more (the TCP handshake). Counts connections. Runs its own event loop on a thread."""

    def __init__(self, upstream: int, delay: float) -> None:
        self.upstream = upstream
        self.delay = delay
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)

    def __enter__(self) -> LatencyProxy:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Future[Any]] = set()
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            # Connections still open (kept-alive clients) end with the proxy: their pumps see EOF.
            for writer in list(self._writers):
                writer.close()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        start = self._loop.time() + 2 * self.delay  # the SYN / SYN-ACK round trip
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        for sock in (writer.get_extra_info("socket"), up_writer.get_extra_info("socket")):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pumps = asyncio.gather(
            self._pump(reader, up_writer, start), self._pump(up_reader, writer, 0.0), return_exceptions=True
        )
        self._tasks.add(pumps)
        await pumps
        self._tasks.discard(pumps)
        for end in (writer, up_writer):
            self._writers.discard(end)
            end.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, start: float) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - self._loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()

        delivering = asyncio.ensure_future(deliver())
        try:
            while True:
                try:
                    chunk = await reader.read(65536)
                except OSError:
                    chunk = b""  # a reset: end this direction as a close would
                await queue.put((max(self._loop.time(), start) + self.delay, chunk))
                if not chunk:
                    break
            with contextlib.suppress(OSError):
                await delivering
        finally:
            delivering.cancel()


def _server_requests(server_url: str, session: requests.Session) -> int:
    return len(session.get(server_url.rsplit("/mcp", 1)[0] + "/requests", timeout=10).json())


def ours(url: str, ca: str, proxy_port: int, keepalive: float) -> Callable[[int], None]:
    client = McpClient(
        connection=ConnectionSettings(
            allow_private_networks=True,
            resolver=lambda host, port: ["127.0.0.1"],
            ca_bundle=str(ca),
            keepalive_seconds=keepalive,
        )
    )
    endpoint = Endpoint(identifier="bench", url=url.replace(url.split("/")[2], f"{NAME}:{proxy_port}"))

    def run(ops: int) -> None:
        for _ in range(ops):
            assert client.call_tool(endpoint, TOOL, ARGUMENTS).text == "hi"

    return run


def floor(url: str, ca: str, proxy_port: int) -> Callable[[int], None]:
    session = named_session({NAME: "127.0.0.1"}, ca)
    target = f"https://{NAME}:{proxy_port}/mcp"
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
    }
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**CALL, "_meta": MODERN_META}}
    )

    def run(ops: int) -> None:
        for _ in range(ops):
            answer = session.post(target, data=body, headers=headers, timeout=30)
            assert answer.status_code == 200 and '"hi"' in answer.text

    return run


def sdk_client(ca: str, proxy_port: int) -> Callable[[int], None]:
    """The SDK 2.x Client per call, its streamable HTTP transport as ``Client(url)`` makes it."""
    import httpx2
    from httpcore2._backends.auto import AutoBackend
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    class Named(AutoBackend):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
            return await super().connect_tcp("127.0.0.1" if host == NAME else host, port, *args, **kwargs)

    url = f"https://{NAME}:{proxy_port}/mcp"
    context = ssl.create_default_context(cafile=ca)

    async def calls(ops: int) -> None:
        for _ in range(ops):
            transport = httpx2.AsyncHTTPTransport(verify=context)
            transport._pool._network_backend = Named()  # the name dials the proxy; SNI stays the name
            timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
            async with (
                httpx2.AsyncClient(transport=transport, timeout=timeout) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                result = await client.call_tool(TOOL, ARGUMENTS)
                assert getattr(result.content[0], "text", None) == "hi"

    def run(ops: int) -> None:
        asyncio.run(calls(ops))

    return run


def measure(
    contenders: dict[str, Callable[[int], None]],
    proxy: LatencyProxy | Direct,
    count: Callable[[], int],
    rounds: int,
    ops: int,
) -> dict[str, tuple[float, float, float]]:
    """Per contender: median ms per call, connections and server requests per call."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    connections = dict.fromkeys(contenders, 0)
    served = dict.fromkeys(contenders, 0)
    for run in contenders.values():
        run(2)  # warm: imports, the era verdict, a first connection
    for _ in range(rounds):
        for name, run in contenders.items():
            # Untimed: warm means the connection is kept, not that it outlived another's round.
            run(1)
            dialled, before = proxy.connections, count()
            started = time.perf_counter()
            run(ops)
            times[name].append((time.perf_counter() - started) * 1000 / ops)
            connections[name] += proxy.connections - dialled
            served[name] += count() - before
    calls = rounds * ops
    return {
        name: (statistics.median(times[name]), connections[name] / calls, served[name] / calls)
        for name in contenders
    }


def lookup_cost(samples: int = 200) -> tuple[float, float]:
    """Median µs: the system resolver for localhost alone, and the gate's resolve() around it."""

    def timed(action: Callable[[], Any]) -> float:
        found = []
        for _ in range(samples):
            started = time.perf_counter()
            action()
            found.append((time.perf_counter() - started) * 1e6)
        return statistics.median(found)

    bare = timed(lambda: system_resolver("localhost", 443))
    gated = timed(lambda: resolve("https://localhost/mcp", "bench", 5))
    return bare, gated


class Direct:
    """No proxy (``--loopback``): straight to the server; connections are not counted."""

    connections = 0

    def __init__(self, port: int) -> None:
        self.port = port


@contextlib.contextmanager
def _setup(
    authority: TestAuthority, delay: float | None, *args: str
) -> Iterator[tuple[str, LatencyProxy | Direct]]:
    with sdk_server_tls(authority, NAME, *args) as url:
        port = int(url.split("/")[2].rsplit(":", 1)[1])
        if delay is None:
            yield url, Direct(port)
            return
        with LatencyProxy(port, delay) as proxy:
            yield url, proxy


def bench_era(authority: TestAuthority, era: str, delay: float | None, rounds: int, ops: int) -> list[str]:
    args = ("--no-discover",) if era == "handshake" else ()
    ca = str(authority.bundle)
    with _setup(authority, delay, *args) as (url, proxy):
        direct = named_session({NAME: "127.0.0.1"}, ca)
        contenders = {
            "nr_llm warm": ours(url, ca, proxy.port, DEFAULT_KEEPALIVE_SECONDS),
            "nr_llm, reuse off": ours(url, ca, proxy.port, 0),
            "SDK 2.x `Client`, new per call": sdk_client(ca, proxy.port),
        }
        if era == "2026":
            contenders["floor: one POST, kept-alive `requests`"] = floor(url, ca, proxy.port)
        results = measure(contenders, proxy, lambda: _server_requests(url, direct), rounds, ops)
        direct.close()
        process_pool().clear()
    floor_ms = results.get("floor: one POST, kept-alive `requests`", (None, 0, 0))[0]
    rows = []
    for name, (ms, dialled, served) in results.items():
        versus = f"{ms / floor_ms:5.2f}x" if floor_ms else "—"
        sdk_ms = results["SDK 2.x `Client`, new per call"][0]
        rows.append(
            f"| {era} | {name} | {ms:7.1f} ms | {1000 / ms:6.1f}/s | {versus} | {sdk_ms / ms:5.2f}x "
            f"| {dialled:.2f} | {served:.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--delay-ms", type=float, default=20.0, help="added each way (default 20)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per contender (median)")
    parser.add_argument("--ops", type=int, default=20, help="calls per round")
    parser.add_argument("--loopback", action="store_true", help="no proxy: straight to the server")
    args = parser.parse_args()
    delay = None if args.loopback else args.delay_ms / 1000
    link = (
        "loopback, no proxy (connections not counted)"
        if delay is None
        else f"{args.delay_ms:g} ms each way ({2 * args.delay_ms:g} ms round trip)"
    )
    rows = [
        f"{link}, TLS by name, {args.rounds} rounds of {args.ops} calls",
        "",
        "| era | client | per call | calls/s | vs floor | SDK / this | connections per call "
        "| server requests per call |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="nr-llm-wan-") as directory:
        authority = TestAuthority(Path(directory))
        for era in ("2026", "handshake"):
            rows += bench_era(authority, era, delay, args.rounds, args.ops)
    bare, gated = lookup_cost()
    rows += [
        "",
        f"host lookup: getaddrinfo('localhost') {bare:.0f} µs, the gate's resolve() around it {gated:.0f} µs "
        "(median; a remembered answer costs neither)",
    ]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
