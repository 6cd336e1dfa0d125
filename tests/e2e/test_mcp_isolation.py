"""One server's session id or credential never reaches another (two real peers, one client)."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from tests.peers import running

pytestmark = pytest.mark.e2e


def _seen(port: int) -> list[dict[str, str | None]]:
    return requests.get(f"http://127.0.0.1:{port}/seen", timeout=10).json()  # type: ignore[no-any-return]


def test_two_servers_never_see_each_others_session_or_credential() -> None:
    """Interleaved, concurrent operations on A (bearer) and B (named header) through one client:
    every request to A (its era probes included) carries only A's credential and A-issued session
    ids, and likewise for B; neither server is ever sent a GET."""
    command = [sys.executable, "-m", "tests.peers.adversarial"]
    with running(command) as port_a, running(command) as port_b:
        a = Endpoint(
            identifier="a",
            url=f"http://127.0.0.1:{port_a}/record/0/mcp",
            credential="secret-of-a",
            auth_placement="bearer",
        )
        b = Endpoint(
            identifier="b",
            url=f"http://127.0.0.1:{port_b}/record/0/mcp",
            credential="secret-of-b",
            auth_placement="header",
            auth_header_name="X-Api-Key",
        )
        client = McpClient(connection=ConnectionSettings(allow_private_networks=True))

        def operate(index: int) -> str:
            endpoint = a if index % 2 == 0 else b
            return client.call_tool(endpoint, "echo", {"text": str(index)}).text

        with ThreadPoolExecutor(max_workers=4) as pool:
            assert list(pool.map(operate, range(24))) == ["done"] * 24
        probes_a, probes_b = _seen(port_a), _seen(port_b)
        # The era probes (server/discover; this peer is handshake-era): at least one per server,
        # at most one per operation that started before the first verdict was stored.
        for probes, header, value in (
            (probes_a, "Authorization", "Bearer secret-of-a"),
            (probes_b, "X-Api-Key", "secret-of-b"),
        ):
            discovers = [row for row in probes if row["method"] == "POST server/discover"]
            assert 1 <= len(discovers) <= 4
            assert all(
                row[header] == value and row["MCP-Protocol-Version"] == "2026-07-28" for row in discovers
            )
        seen_a = [row for row in probes_a if row["method"] != "POST server/discover"]
        seen_b = [row for row in probes_b if row["method"] != "POST server/discover"]

    assert len(seen_a) == len(seen_b) == 12 * 4  # initialize, initialized, call, DELETE
    for seen, port, header, value, other in (
        (seen_a, port_a, "Authorization", "Bearer secret-of-a", "secret-of-b"),
        (seen_b, port_b, "X-Api-Key", "secret-of-b", "secret-of-a"),
    ):
        assert {row["method"] for row in seen} == {
            "POST initialize",
            "POST notifications/initialized",
            "POST tools/call",
            "DELETE",
        }
        assert all(row[header] == value for row in seen)
        assert other not in repr(seen)
        sessions = {row["Mcp-Session-Id"] for row in seen if row["method"] != "POST initialize"}
        assert len(sessions) == 12 and all(str(session).startswith(f"{port}-") for session in sessions)
        assert all(row["Mcp-Session-Id"] is None for row in seen if row["method"] == "POST initialize")
        # The revision the peer chose, on every request after initialize and never on it.
        assert {row["MCP-Protocol-Version"] for row in seen if row["method"] != "POST initialize"} == {
            "2025-06-18"
        }
        assert {row["MCP-Protocol-Version"] for row in seen if row["method"] == "POST initialize"} == {None}
    assert all(row["X-Api-Key"] is None for row in probes_a)
    assert all(row["Authorization"] is None for row in probes_b)
