"""What a turn shares between its threads and tasks, under both: one protocol client, the
process's connection pool and era cache, and the OAuth grant store.

Each claim is the one sentence docs/operator-guide.md makes ("A model's turn").
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from nr_llm import tools
from nr_llm.authorization import store as store_module
from nr_llm.mcp import Endpoint
from nr_llm.mcp.protocol.eras import cache_key, process_cache
from nr_llm.mcp.wire.pool import MAX_IDLE_PER_ORIGIN, Origin, process_pool
from nr_llm.models import McpTool, ToolCall, ToolCallStatus
from nr_llm.servers.endpoints import mcp_client
from nr_llm.tools import threads
from tests.authorization.test_store import _expired_grant, _operation
from tests.factories import McpServerFactory
from tests.oauth_scripted import TokenEndpoint, authorization_server, peer
from tests.peers import sdk_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _methods(url: str) -> list[str]:
    return [row["method"] for row in requests.get(url.replace("/mcp", "/requests"), timeout=10).json()]


def _origin(url: str) -> Origin:
    host, port = url.split("/")[2].rsplit(":", 1)
    return Origin("http", host, int(port))


def test_one_client_the_pool_and_the_era_cache_under_threads(settings):
    """Sixteen threads share one client against a 2026-07-28 server and a handshake-era one:
    every answer is its own caller's, each origin keeps its era (one verdict, the right one),
    no call is sent twice, and the pool keeps no more than its limit per origin."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as modern, sdk_server("--no-discover", "--stateless") as old:
        client = mcp_client()
        endpoints = [Endpoint(identifier="modern", url=modern), Endpoint(identifier="old", url=old)]
        barrier = threading.Barrier(16)

        def call(index: int) -> str:
            barrier.wait(10)
            return client.call_tool(endpoints[index % 2], "echo", {"text": f"caller {index}"}).text

        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(call, range(16)))
        assert answers == [f"caller {index}" for index in range(16)]
        now = time.monotonic_ns()
        assert process_cache().get(cache_key(modern), now).era == "modern"  # type: ignore[union-attr]
        assert process_cache().get(cache_key(old), now).era == "handshake"  # type: ignore[union-attr]
        assert _methods(modern).count("tools/call") == 8 and _methods(old).count("tools/call") == 8
        for url in (modern, old):
            assert process_pool().count(_origin(url)) <= MAX_IDLE_PER_ORIGIN


def test_the_tool_api_under_asyncio(settings):
    """Sixteen gathered aexecute calls over both eras: each result is its own call's, every
    row finished, each server got exactly its eight calls."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as modern, sdk_server("--no-discover", "--stateless") as old:
        for identifier, url in (("modern", modern), ("old", old)):
            server = McpServerFactory.create(identifier=identifier, url=url)
            McpTool.objects.create(
                server=server,
                tool_name=f"mcp_{identifier}_echo",
                remote_name="echo",
                enabled=True,
                input_schema=SCHEMA,
            )

        async def gathered() -> list[tools.ToolResult]:
            return await asyncio.gather(
                *(
                    tools.aexecute(f"mcp_{('modern', 'old')[index % 2]}_echo", {"text": f"task {index}"})
                    for index in range(16)
                )
            )

        results = asyncio.run(gathered())
        assert [r.text for r in results] == [f"task {index}" for index in range(16)]
        assert set(ToolCall.objects.values_list("status", flat=True)) == {ToolCallStatus.SUCCEEDED}
        assert _methods(modern).count("tools/call") == 8 and _methods(old).count("tools/call") == 8


def test_the_oauth_store_spends_a_refresh_token_once_under_asyncio():
    """Four tasks of one event loop each need a token while it is expired (the token endpoint
    takes a second): exactly one refresh, with rt0, and all four get its token."""
    with peer() as auth:
        token = authorization_server(auth, token=TokenEndpoint(delay=1.0))
        server = _expired_grant(auth)

        def operate() -> object:
            tokens = _operation(server)
            try:
                return tokens.bearer()
            finally:
                tokens.close()

        async def gathered() -> list[object]:
            return await asyncio.gather(*(threads.run(operate) for _ in range(4)))

        results = asyncio.run(gathered())
    assert results == ["access-1"] * 4
    assert [form["refresh_token"] for form in token.forms] == ["rt0"]
    gc.collect()
    assert len(store_module._SERVER_LOCKS) == 0
