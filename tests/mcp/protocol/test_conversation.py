"""The conversation on the wire: handshake, headers, session, and nothing else sent."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError

from ..scripted import URL, ScriptedServer


@dataclass
class HealthLog:
    contacts: list[tuple[str, int]] = field(default_factory=list)
    fail: bool = False

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        if self.fail:
            raise RuntimeError("database down")
        self.contacts.append((endpoint.identifier, latency_ms))


def _endpoint(**kwargs) -> Endpoint:
    return Endpoint(identifier="demo", url=URL, **kwargs)


def test_initialize_offers_the_newest_revision_with_client_info_and_no_capabilities(mock, clock) -> None:
    """initialize carries protocolVersion 2025-11-25, clientInfo name and version, and empty capabilities."""
    server = ScriptedServer(clock)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).ping(_endpoint())
    params = server.seen[0].body["params"]
    assert params["protocolVersion"] == "2025-11-25"
    assert params["capabilities"] == {}
    assert params["clientInfo"]["name"] == "nr-llm" and params["clientInfo"]["version"]


def test_the_revision_the_server_chose_is_sent_on_every_later_request(mock, clock) -> None:
    """A server choosing 2025-06-18 gets MCP-Protocol-Version: 2025-06-18 after initialize, not on it."""
    server = ScriptedServer(clock, protocol_version="2025-06-18")
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    versions = [seen.headers.get("MCP-Protocol-Version") for seen in server.seen]
    assert versions == [None, "2025-06-18", "2025-06-18", "2025-06-18"]


def test_an_issued_session_id_is_carried_and_ended_with_delete(mock, clock) -> None:
    """Mcp-Session-Id is absent on initialize, carried on every later leg, and the session is DELETEd."""
    server = ScriptedServer(clock, session_id="abc-123")
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    assert server.methods == ["initialize", "notifications/initialized", "tools/call", "DELETE"]
    assert [seen.headers.get("Mcp-Session-Id") for seen in server.seen] == [
        None,
        "abc-123",
        "abc-123",
        "abc-123",
    ]


def test_without_a_session_no_session_header_and_no_delete(mock, clock) -> None:
    """A stateless server gets no Mcp-Session-Id and no DELETE: exactly three POSTs."""
    server = ScriptedServer(clock, session_id=None)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    assert [seen.http_method for seen in server.seen] == ["POST", "POST", "POST"]
    assert all("Mcp-Session-Id" not in seen.headers for seen in server.seen)


def test_every_post_accepts_json_and_event_streams(mock, clock) -> None:
    """Accept names both answer forms and Content-Type is JSON on every POST."""
    server = ScriptedServer(clock)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    for seen in server.seen[:3]:
        assert seen.headers["Accept"] == "application/json, text/event-stream"
        assert seen.headers["Content-Type"] == "application/json"


def test_ping_is_the_handshake_only(mock, clock) -> None:
    """ping sends initialize, the confirmation and the DELETE; no tools/list, no GET stream."""
    server = ScriptedServer(clock)
    server.install(mock)
    report = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).ping(
        _endpoint()
    )
    assert server.methods == ["initialize", "notifications/initialized", "DELETE"]
    assert (report.reachable, report.protocol_version, report.server_name) == (True, "2025-11-25", "scripted")
    assert (report.error_kind, report.failure) == ("", None)


def test_a_delete_refused_with_405_or_failing_leaves_the_answer_standing(mock, clock) -> None:
    """DELETE answered 405 or 500 does not turn a successful call into an error."""
    for status in (405, 500):
        server = ScriptedServer(clock, overrides={"DELETE": (status, {}, "")})
        mock.reset()
        server.install(mock)
        outcome = McpClient(
            connection=ConnectionSettings(allow_private_networks=True), clock=clock
        ).call_tool(_endpoint(), "echo")
        assert outcome.text == "ok"
        assert server.methods[-1] == "DELETE"


def test_empty_arguments_are_sent_as_an_object(mock, clock) -> None:
    """call_tool without arguments sends arguments: {} (never null or missing)."""
    server = ScriptedServer(clock)
    server.install(mock)
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    assert server.seen[2].body["params"] == {"name": "echo", "arguments": {}}


def test_a_forgotten_session_is_reopened_once_within_the_same_budget(mock, clock) -> None:
    """A 404 for our session starts one new session and repeats the request, all on the one budget."""
    server = ScriptedServer(clock, seconds={"tools/call": 2}, forget_sessions=1)
    server.install(mock)
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        _endpoint(), "echo"
    )
    assert outcome.text == "ok"
    handshake = ["initialize", "notifications/initialized"]
    assert server.methods == [*handshake, "tools/call", *handshake, "tools/call", "DELETE"]
    assert server.grants == [20, 20, 20, 18, 18, 18, 16]
    # The new initialize is a fresh handshake: no stale session id, no revision not yet negotiated.
    assert server.seen[3].headers.get("Mcp-Session-Id") is None
    assert server.seen[3].headers.get("MCP-Protocol-Version") is None
    assert server.seen[4].headers.get("MCP-Protocol-Version") == "2025-11-25"


def test_a_session_forgotten_twice_is_session_expired(mock, clock) -> None:
    """A server that forgets every session ends in kind 'session_expired' after one reopen."""
    server = ScriptedServer(clock, forget_sessions=99)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            _endpoint(), "echo"
        )
    assert caught.value.kind == "session_expired" and "'demo'" in str(caught.value)
    assert server.methods.count("initialize") == 2 and server.methods.count("tools/call") == 2


def test_health_records_one_contact_with_the_latency_of_the_completing_leg(mock, clock) -> None:
    """A successful call records once, with the work leg's latency (2.5 s on the fake clock)."""
    health = HealthLog()
    server = ScriptedServer(clock, seconds={"initialize": 1, "tools/call": 2.5})
    server.install(mock)
    McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=clock, health=health
    ).call_tool(_endpoint(), "echo")
    assert health.contacts == [("demo", 2500)]


def test_a_walk_and_a_ping_record_the_latency_of_their_last_leg(mock, clock) -> None:
    """list_tools records the last page's latency (not the handshake's, not the sum); ping
    records the confirmation's. One contact per operation."""
    health = HealthLog()
    pages: dict[str | None, dict[str, Any]] = {
        None: {"tools": [{"name": "a"}], "nextCursor": "2"},
        "2": {"tools": [{"name": "b"}]},
    }
    seconds = {"initialize": 1, "notifications/initialized": 0.25, "tools/list": 3}
    server = ScriptedServer(clock, seconds=seconds, pages=pages)
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock, health=health)
    client.list_tools(_endpoint())
    client.ping(_endpoint())
    assert health.contacts == [("demo", 3000), ("demo", 250)]


def test_a_failed_operation_records_nothing(mock, clock) -> None:
    """An operation that ends in McpTransportError leaves the health sink untouched."""
    health = HealthLog()
    server = ScriptedServer(clock, overrides={"tools/call": (500, {}, "")})
    server.install(mock)
    with pytest.raises(McpTransportError):
        McpClient(
            connection=ConnectionSettings(allow_private_networks=True), clock=clock, health=health
        ).call_tool(_endpoint(), "echo")
    assert (
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock, health=health)
        .ping(_endpoint())
        .reachable
    )
    assert len(health.contacts) == 1  # only the ping


def test_a_failing_health_sink_does_not_fail_the_call(mock, clock, caplog) -> None:
    """A sink that raises is logged and swallowed: the caller still gets its outcome."""
    server = ScriptedServer(clock)
    server.install(mock)
    with caplog.at_level(logging.WARNING, logger="nr_llm.mcp"):
        outcome = McpClient(
            connection=ConnectionSettings(allow_private_networks=True),
            clock=clock,
            health=HealthLog(fail=True),
        ).call_tool(_endpoint(), "echo")
    assert outcome.text == "ok"
    assert caplog.record_tuples == [
        ("nr_llm.mcp", logging.WARNING, "could not record contact with MCP server demo")
    ]


def test_ping_never_raises_for_a_transport_failure(mock, clock) -> None:
    """A 500 on initialize is a report with reachable=False and the message, not an exception."""
    server = ScriptedServer(clock, overrides={"initialize": (500, {}, "")})
    server.install(mock)
    report = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).ping(
        _endpoint()
    )
    assert report.reachable is False and "HTTP 500" in report.error and "'demo'" in report.error
    assert report.latency_ms is None


def test_a_failed_ping_keeps_the_error_and_its_kind_out_of_repr_and_equality(mock, clock) -> None:
    """The report carries the failure (kind status, HTTP 500) for a caller that acts on it; repr and
    == are the report's values only, so two reports of one failure still compare equal."""
    server = ScriptedServer(clock, overrides={"initialize": (500, {}, "")})
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    report = client.ping(_endpoint())
    assert report.error_kind == "status"
    assert report.failure is not None and report.failure.http_status == 500
    assert "failure" not in repr(report) and "McpTransportError" not in repr(report)
    again = client.ping(_endpoint())
    assert again == report and again.failure is not report.failure


def test_ping_cleans_and_clips_the_servers_name_and_version(mock, clock) -> None:
    """Server name and version lose control characters and are clipped to 100 characters."""
    server = ScriptedServer(clock)
    server.install(mock)
    original = server._answer

    def hostile(request):
        status, headers, body = original(request)
        return status, headers, body.replace('"scripted"', '"evil\\u001b[2J\\n' + "n" * 300 + '"')

    mock.reset()
    mock.add_callback("POST", URL, callback=hostile)
    mock.add_callback("DELETE", URL, callback=original)
    report = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).ping(
        _endpoint()
    )
    assert report.server_name.startswith("evil[2J n")
    assert len(report.server_name) == 100 and "\x1b" not in report.server_name
