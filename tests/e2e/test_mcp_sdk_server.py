"""The client against the official Python SDK server, stateless/JSON and stateful/SSE."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from tests.peers import sdk_server

pytestmark = pytest.mark.e2e


@dataclass
class HealthLog:
    contacts: list[tuple[str, int]] = field(default_factory=list)

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        self.contacts.append((endpoint.identifier, latency_ms))


@pytest.fixture(scope="module", params=["stateless", "stateful"])
def server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    mode = ["--stateless"] if request.param == "stateless" else []
    with sdk_server(*mode, "--extra-tools", "495", "--page-size", "10") as url:
        yield url


def _endpoint(url: str) -> Endpoint:
    return Endpoint(identifier="sdk", url=url, budget_seconds=30)


def test_ping_reports_the_discovered_server(server_url: str) -> None:
    """ping() reaches the (dual-era) SDK 2.3 server with server/discover and reports the 2026-07-28
    revision and era, its name and version, and latency."""
    health = HealthLog()
    report = McpClient(connection=ConnectionSettings(allow_private_networks=True), health=health).ping(
        _endpoint(server_url)
    )
    assert report.reachable and report.error == ""
    assert (report.protocol_version, report.era) == ("2026-07-28", "modern")
    assert (report.server_name, report.server_version) == ("nr-llm test peer", "1.2.3")
    assert report.latency_ms is not None and report.latency_ms >= 0
    assert health.contacts == [("sdk", report.latency_ms)]


def test_list_tools_walks_all_fifty_pages(server_url: str) -> None:
    """500 tools in pages of 10: every page followed, every tool object returned once, in order."""
    health = HealthLog()
    tools = McpClient(connection=ConnectionSettings(allow_private_networks=True), health=health).list_tools(
        _endpoint(server_url)
    )
    names = [tool["name"] for tool in tools]
    assert len(names) == 500 == len(set(names))
    assert names[:5] == ["echo", "add", "slow", "pixel", "fail"]
    assert names[-1] == "generated_494"
    assert all("inputSchema" in tool for tool in tools)
    assert len(health.contacts) == 1


def test_call_tool_returns_the_text(server_url: str) -> None:
    """echo answers with the text it was given, as a successful outcome."""
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True)).call_tool(
        _endpoint(server_url), "echo", {"text": "héllo"}
    )
    assert (outcome.text, outcome.is_error) == ("héllo", False)


def test_call_tool_without_arguments_sends_an_object(server_url: str) -> None:
    """A tool with defaults is callable with no arguments (sent as {}); its image block is kept and
    named in order in the text."""
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True)).call_tool(
        _endpoint(server_url), "pixel"
    )
    assert outcome.text == "a single pixel\n[image: image/png, 70 bytes]"
    assert [block["type"] for block in outcome.content] == ["text", "image"]
    assert outcome.is_error is False


def test_a_failing_tool_is_a_failed_outcome_not_an_exception(server_url: str) -> None:
    """isError: true becomes CallOutcome(is_error=True) with the server's text; health still records."""
    health = HealthLog()
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True), health=health).call_tool(
        _endpoint(server_url), "fail", {"reason": "nope"}
    )
    assert outcome.is_error is True
    assert "nope" in outcome.text
    assert len(health.contacts) == 1


def test_an_unknown_tool_is_a_failed_outcome(server_url: str) -> None:
    """The SDK answers a call to a tool it does not have with isError: a failed outcome naming the tool."""
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True)).call_tool(
        _endpoint(server_url), "no_such_tool"
    )
    assert outcome.is_error is True
    assert "no_such_tool" in outcome.text


def test_a_legacy_sse_endpoint_is_named_with_what_to_do() -> None:
    """The SDK's HTTP+SSE transport (2024-11-05) answers POST /sse with 405: the error names the
    legacy transport and the way out (the Streamable HTTP URL, or a bridge), not just "405"."""
    with sdk_server("--legacy-sse") as url, pytest.raises(McpTransportError) as raised:
        McpClient(connection=ConnectionSettings(allow_private_networks=True)).list_tools(
            _endpoint(url.removesuffix("/mcp") + "/sse")
        )
    message = str(raised.value)
    assert raised.value.http_status == 405
    assert "HTTP 405" in message and "legacy HTTP+SSE" in message
    assert "Streamable HTTP" in message and "bridge" in message


def test_a_port_nothing_listens_on_is_named_with_its_address() -> None:
    """A closed port reads "could not be reached at 127.0.0.1:<port>: connection refused", not the
    name of an exception class."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the call: nothing listens there
    with pytest.raises(McpTransportError) as raised:
        McpClient(connection=ConnectionSettings(allow_private_networks=True)).list_tools(
            _endpoint(f"http://127.0.0.1:{port}/mcp")
        )
    assert raised.value.kind == "unreachable"
    assert f"could not be reached at 127.0.0.1:{port}: connection refused" in str(raised.value)
    assert "ConnectionError" not in str(raised.value)
