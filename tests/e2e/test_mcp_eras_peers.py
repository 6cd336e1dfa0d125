"""Both eras against real servers on 127.0.0.1, with every HTTP request counted by the server.

- the official Python SDK 2.3 server (dual-era), in its default configuration and stateless
  with JSON answers: the 2026-07-28 era, ONE POST per steady-state tool call;
- the same SDK serving only its 2026-07-28 handler (a server that never learnt initialize);
- old-era-only servers through the fallback: the SDK answering server/discover with -32601,
  and server-everything from npm.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.protocol.eras import cache_key, process_cache
from tests.e2e.test_mcp_server_everything import EVERYTHING, PEERS
from tests.peers import running, sdk_server

pytestmark = pytest.mark.e2e

MODERN = "2026-07-28"


def _client() -> McpClient:
    return McpClient(connection=ConnectionSettings(allow_private_networks=True))


def _endpoint(url: str, identifier: str = "sdk") -> Endpoint:
    return Endpoint(identifier=identifier, url=url, budget_seconds=20)


def _requests(url: str) -> list[dict[str, Any]]:
    return requests.get(url.replace("/mcp", "/requests"), timeout=10).json()  # type: ignore[no-any-return]


@pytest.fixture(scope="module", params=["default", "stateless-json", "modern-only"])
def modern_url(request: pytest.FixtureRequest) -> Iterator[str]:
    args = {"default": [], "stateless-json": ["--stateless"], "modern-only": ["--modern-only"]}[request.param]
    with sdk_server(*args) as url:
        yield url


def test_steady_state_is_one_post_per_tool_call(modern_url: str) -> None:
    """One probe, then each of five calls is exactly one POST: no initialize, no
    notification, no GET, no DELETE, every request stamped 2026-07-28 and sessionless."""
    client = _client()
    before = len(_requests(modern_url))
    for index in range(5):
        assert client.call_tool(_endpoint(modern_url), "echo", {"text": str(index)}).text == str(index)
    seen = _requests(modern_url)[before:]
    assert [(row["http"], row["method"]) for row in seen] == [("POST", "server/discover")] + [
        ("POST", "tools/call")
    ] * 5
    assert all(row["protocol"] == MODERN and row["session"] is None for row in seen)


def test_ping_and_list_tools_in_the_modern_era(modern_url: str) -> None:
    """ping is one server/discover reporting revision, era and the server's identity;
    list_tools is tools/list pages in the same envelope."""
    client = _client()
    report = client.ping(_endpoint(modern_url))
    assert (report.reachable, report.protocol_version, report.era) == (True, MODERN, "modern")
    assert (report.server_name, report.server_version) == ("nr-llm test peer", "1.2.3")
    names = [tool["name"] for tool in client.list_tools(_endpoint(modern_url))]
    assert names[:5] == ["echo", "add", "slow", "pixel", "fail"]


def test_a_modern_only_server_refuses_the_handshake_and_is_reached_anyway() -> None:
    """The SDK's 2026 handler alone answers initialize with 400 (no _meta); with the handshake
    era wrongly remembered, the client drops it, probes, and the call runs once."""
    with sdk_server("--modern-only") as url:
        process_cache().remember(cache_key(url), "handshake", "", 600, time.monotonic_ns())
        assert _client().call_tool(_endpoint(url), "echo", {"text": "once"}).text == "once"
        seen = [(row["method"], row["protocol"]) for row in _requests(url)]
    assert seen == [("initialize", None), ("server/discover", MODERN), ("tools/call", MODERN)]


def test_a_server_answering_discover_with_method_not_found_is_reached_by_handshake() -> None:
    """An SDK server that answers server/discover with -32601 (as pre-2026 servers do): the
    call goes through initialize in the same operation; later calls skip the probe."""
    with sdk_server("--no-discover", "--stateless") as url:
        client = _client()
        for text in ("one", "two"):
            assert client.call_tool(_endpoint(url), "echo", {"text": text}).text == text
        report = client.ping(_endpoint(url))
        seen = [row["method"] for row in _requests(url)]
    handshake = ["initialize", "notifications/initialized"]
    assert seen == ["server/discover", *handshake, "tools/call", *handshake, "tools/call", *handshake]
    assert (report.protocol_version, report.era) == ("2025-11-25", "handshake")


def test_server_everything_is_reached_through_the_fallback() -> None:
    """The npm reference server (handshake era only) refuses the probe; ping reports its
    handshake revision and the call works."""
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = ["node", "-r", str(PEERS / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]
    with running(command) as port:
        endpoint = _endpoint(f"http://127.0.0.1:{port}/mcp", "everything")
        client = _client()
        report = client.ping(endpoint)
        assert (report.protocol_version, report.era) == ("2025-11-25", "handshake")
        assert client.call_tool(endpoint, "echo", {"message": "hi"}).text.endswith("hi")
        verdict = process_cache().get(cache_key(endpoint.url), time.monotonic_ns())
        assert verdict is not None and verdict.era == "handshake"


def test_two_servers_of_different_eras_keep_their_own_verdicts() -> None:
    """A modern and an old-era server used alternately by one client: one probe each, then
    one POST per call to the modern one and the handshake to the old one, every time."""
    with sdk_server("--stateless") as modern, sdk_server("--no-discover", "--stateless") as old:
        client = _client()
        for index in range(3):
            assert client.call_tool(_endpoint(modern), "echo", {"text": f"m{index}"}).text == f"m{index}"
            assert client.call_tool(_endpoint(old, "old"), "echo", {"text": f"o{index}"}).text == f"o{index}"
        modern_seen = [row["method"] for row in _requests(modern)]
        old_seen = [row["method"] for row in _requests(old)]
    assert modern_seen == ["server/discover", "tools/call", "tools/call", "tools/call"]
    assert old_seen == ["server/discover"] + ["initialize", "notifications/initialized", "tools/call"] * 3


def test_two_tenants_behind_one_url_path_keep_their_own_verdicts() -> None:
    """``?tenant=a`` is served by a 2026-07-28 backend and ``?tenant=b`` by an old one, behind
    one path (issue 18, finding 11): each query probes for itself and keeps its own era, so the
    old tenant gets the handshake, never the modern tenant's verdict."""
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        base = f"http://127.0.0.1:{port}/tenant/0/mcp"
        client = _client()
        for _ in range(2):
            for tenant in ("a", "b"):
                assert client.call_tool(_endpoint(f"{base}?tenant={tenant}", tenant), "echo").text == "done"
        rows = requests.get(f"http://127.0.0.1:{port}/seen", timeout=10).json()
    seen = {
        tenant: [row["method"] for row in rows if row["path"].endswith(f"?tenant={tenant}")]
        for tenant in "ab"
    }
    assert seen["a"] == ["POST server/discover", "POST tools/call", "POST tools/call"]
    handshake = ["POST initialize", "POST notifications/initialized", "POST tools/call"]
    assert seen["b"] == ["POST server/discover", *handshake, *handshake]
