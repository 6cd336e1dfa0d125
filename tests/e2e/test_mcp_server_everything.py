"""The client against the official TypeScript reference server, @modelcontextprotocol/server-everything.

It answers over event streams and with every kind of content block; a ``node -r`` preload
pins it to 127.0.0.1 on an OS-chosen port (it would otherwise listen on all interfaces).
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm.mcp import Endpoint, McpClient, McpTransportError
from tests.peers import ROOT, running

pytestmark = pytest.mark.e2e

PEERS = ROOT / "tests" / "e2e" / "peers"
EVERYTHING = PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
CLIENT = McpClient(allow_private_networks=True)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Endpoint]:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = ["node", "-r", str(PEERS / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]
    with running(command) as port:
        yield Endpoint(identifier="everything", url=f"http://127.0.0.1:{port}/mcp", budget_seconds=10)


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of every listening TCP socket on ``port``, from the kernel's tables."""
    found: set[str] = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        for row in table.read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                raw = bytes.fromhex(address)
                # The kernel prints each 32-bit word in host (little-endian) order.
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                found.add(str(ipaddress.ip_address(words)))
    return found


def test_the_peer_listens_on_loopback_only(endpoint: Endpoint) -> None:
    """The preload pinned the server to 127.0.0.1: the kernel lists its port as listening
    on 127.0.0.1 and on no other address (0.0.0.0 or :: would mean every interface)."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux's /proc/net/tcp to see listening sockets")
    port = int(endpoint.url.rsplit(":", 1)[1].split("/", 1)[0])
    assert _listening_addresses(port) == {"127.0.0.1"}
    assert CLIENT.ping(endpoint).reachable


def test_ping_reports_the_reference_server(endpoint: Endpoint) -> None:
    """ping returns the negotiated revision and the server's own name."""
    report = CLIENT.ping(endpoint)
    assert report.protocol_version == "2025-11-25"
    assert report.server_name == "mcp-servers/everything" and report.server_version


def test_list_tools_returns_every_tool_object(endpoint: Endpoint) -> None:
    """The catalogue has the reference tools, each an object with a name and an input schema."""
    tools = CLIENT.list_tools(endpoint)
    names = {tool["name"] for tool in tools}
    assert {
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-resource-links",
        "trigger-long-running-operation",
    } <= names
    assert all(isinstance(tool.get("inputSchema"), dict) for tool in tools)


def test_echo_over_an_event_stream(endpoint: Endpoint) -> None:
    """echo's answer arrives as an event stream and reads like a JSON answer."""
    assert CLIENT.call_tool(endpoint, "echo", {"message": "hi"}).text == "Echo: hi"


@pytest.mark.parametrize(
    ("tool", "arguments", "note"),
    [
        ("get-tiny-image", {}, "[non-text content not shown: 1 image]"),
        ("get-resource-links", {"count": 3}, "[non-text content not shown: 3 resource_link]"),
        (
            "get-resource-reference",
            {"resourceType": "Text", "resourceId": 1},
            "[non-text content not shown: 1 resource]",
        ),
    ],
)
def test_non_text_blocks_are_counted_in_a_leading_note(endpoint: Endpoint, tool, arguments, note) -> None:
    """Images, resource links and embedded resources are named by protocol type ahead of the text."""
    outcome = CLIENT.call_tool(endpoint, tool, arguments)
    assert outcome.text.startswith(note + "\n") and not outcome.is_error


def test_invalid_arguments_are_a_failed_outcome(endpoint: Endpoint) -> None:
    """get-sum without numbers is refused by the server: an isError outcome, not a hang or a crash."""
    outcome = CLIENT.call_tool(endpoint, "get-sum", {"a": "x"})
    assert outcome.is_error is True


def test_a_long_running_tool_is_cut_at_the_budget(endpoint: Endpoint) -> None:
    """A 30 s operation under a 3 s budget ends with 'timeout' within budget + 1 s."""
    short = Endpoint(identifier="everything", url=endpoint.url, budget_seconds=3)
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        CLIENT.call_tool(short, "trigger-long-running-operation", {"duration": 30, "steps": 3})
    assert caught.value.kind == "timeout"
    assert time.monotonic() - started < 4
