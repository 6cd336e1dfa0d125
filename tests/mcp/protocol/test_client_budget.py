"""One budget per operation, spent by its legs in order (fake clock, scripted server)."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError

from ..scripted import URL, FakeClock, ScriptedServer


def _client(clock: FakeClock) -> McpClient:
    # The scripted host does not resolve; the host gate has its own tests.
    return McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)


def _endpoint(budget: float = 20) -> Endpoint:
    return Endpoint(identifier="demo", url=URL, budget_seconds=budget)


def test_the_last_leg_of_a_tool_call_gets_only_what_the_handshake_left(mock, clock) -> None:
    """A 4 s initialize and a 2 s confirmation give the work leg grants [20, 16, 14]."""
    server = ScriptedServer(clock, seconds={"initialize": 4, "notifications/initialized": 2}, session_id=None)
    server.install(mock)
    _client(clock).call_tool(_endpoint(), "echo", {"text": "hi"})
    assert server.methods == ["initialize", "notifications/initialized", "tools/call"]
    assert server.grants == [20, 16, 14]


def test_every_leg_gets_a_connect_and_read_timeout_that_is_a_positive_int(mock, clock) -> None:
    """requests never sees None or 0: each leg's timeout is (grant, grant) with grant >= 1."""
    server = ScriptedServer(clock, seconds={"initialize": 19.5})
    server.install(mock)
    with pytest.raises(McpTransportError):
        _client(clock).call_tool(_endpoint(), "echo")
    for seen in server.seen:
        connect, read = seen.timeout
        assert connect == read and isinstance(read, int) and read >= 1


def test_session_delete_is_a_leg_of_the_same_budget(mock, clock) -> None:
    """With a session, DELETE follows the work and is granted what the work left."""
    server = ScriptedServer(clock, seconds={"initialize": 1, "tools/call": 5})
    server.install(mock)
    _client(clock).call_tool(_endpoint(), "echo")
    assert server.methods == ["initialize", "notifications/initialized", "tools/call", "DELETE"]
    assert server.grants == [20, 19, 19, 14]


def test_the_pages_of_a_walk_share_one_budget(mock, clock) -> None:
    """Each 3 s page spends the same budget; the grants fall page by page."""
    pages: dict[str | None, dict[str, Any]] = {None: {"tools": [{"name": "t0"}], "nextCursor": "c1"}}
    for index in range(1, 4):
        pages[f"c{index}"] = {"tools": [{"name": f"t{index}"}], "nextCursor": f"c{index + 1}"}
    pages["c4"] = {"tools": [{"name": "t4"}]}
    server = ScriptedServer(clock, seconds={"tools/list": 3}, pages=pages, session_id=None)
    server.install(mock)
    tools = _client(clock).list_tools(_endpoint())
    assert [tool["name"] for tool in tools] == ["t0", "t1", "t2", "t3", "t4"]
    assert server.grants == [20, 20, 20, 17, 14, 11, 8]


def test_a_walk_that_outgrows_the_budget_stops_before_sending_the_next_page(mock, clock) -> None:
    """5 s pages in a 12 s budget: pages at 0, 5 and 10 s (granted 12, 7, 2), then no fourth page:
    deadline_exhausted, never a partial list."""
    pages: dict[str | None, dict[str, Any]] = {None: {"tools": [{"name": "t0"}], "nextCursor": "c1"}}
    for index in range(1, 10):
        pages[f"c{index}"] = {"tools": [{"name": f"t{index}"}], "nextCursor": f"c{index + 1}"}
    server = ScriptedServer(clock, seconds={"tools/list": 5}, pages=pages, session_id=None)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).list_tools(_endpoint(12))
    assert caught.value.kind == "deadline_exhausted"
    assert "12 s" in str(caught.value)
    assert server.methods == ["initialize", "notifications/initialized"] + ["tools/list"] * 3
    assert server.grants == [12, 12, 12, 7, 2]


def test_a_second_operation_starts_from_a_full_budget(mock, clock) -> None:
    """The budget belongs to the operation: after a slow call, the next one is granted 20 again."""
    server = ScriptedServer(clock, seconds={"tools/call": 15}, session_id=None)
    server.install(mock)
    client = _client(clock)
    client.call_tool(_endpoint(), "echo")
    client.call_tool(_endpoint(), "echo")
    assert server.grants == [20, 20, 20, 20, 20, 20]


def test_a_budget_below_the_floor_is_raised_to_one_second(mock, clock) -> None:
    """A 0.3 s budget still sends its first leg, granted one second."""
    server = ScriptedServer(clock, session_id=None)
    server.install(mock)
    _client(clock).call_tool(_endpoint(0.3), "echo")
    assert server.grants == [1, 1, 1]


def test_an_exhausted_budget_sends_nothing_more(mock, clock) -> None:
    """A handshake that spends 19.5 of 20 s means tools/call is never sent."""
    server = ScriptedServer(clock, seconds={"initialize": 19.5}, session_id=None)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "deadline_exhausted"
    assert "not asked" in str(caught.value)
    assert server.methods == ["initialize"]
