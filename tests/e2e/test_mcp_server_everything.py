"""The client against the official TypeScript reference server, @modelcontextprotocol/server-everything.

It answers over event streams and with every kind of content block; a ``node -r`` preload
pins it to 127.0.0.1 on an OS-chosen port (it would otherwise listen on all interfaces).
"""

from __future__ import annotations

import base64
import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.progress import Progress
from nr_llm.tools import ToolResult, tool_messages
from tests.peers import ROOT, running

pytestmark = pytest.mark.e2e

PEERS = ROOT / "tests" / "e2e" / "peers"
EVERYTHING = PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
CLIENT = McpClient(connection=ConnectionSettings(allow_private_networks=True))


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


def test_an_image_is_kept_in_mcp_shape_and_reaches_each_provider(endpoint: Endpoint) -> None:
    """get-tiny-image's PNG is kept (valid base64, image/png), named in order in the text, and
    becomes an image part in each provider's messages."""
    outcome = CLIENT.call_tool(endpoint, "get-tiny-image", {})
    (image,) = [block for block in outcome.content if block["type"] == "image"]
    assert image["mimeType"] == "image/png" and base64.b64decode(image["data"]).startswith(b"\x89PNG")
    assert "[image: image/png, " in outcome.text and not outcome.notes
    assert not outcome.is_error
    result = ToolResult(outcome.text, False, "everything", content=outcome.content)
    (message,) = tool_messages("anthropic", [("toolu_1", result)])
    assert message["content"][0]["content"][1]["source"]["data"] == image["data"]
    chat = tool_messages("openai", [("call_1", result)])
    assert chat[1]["content"][1]["image_url"]["url"] == f"data:image/png;base64,{image['data']}"


def test_resource_links_are_kept_with_their_uris(endpoint: Endpoint) -> None:
    """get-resource-links' links are kept in MCP shape, each named in the text with its URI."""
    outcome = CLIENT.call_tool(endpoint, "get-resource-links", {"count": 3})
    links = [block for block in outcome.content if block["type"] == "resource_link"]
    assert len(links) == 3 and all(link["uri"].startswith("demo://") for link in links)
    assert all(f"<{link['uri']}>" in outcome.text for link in links)


@pytest.mark.parametrize(("kind", "field"), [("Text", "text"), ("Blob", "blob")])
def test_an_embedded_resource_is_kept_with_its_text_or_blob(endpoint: Endpoint, kind, field) -> None:
    """get-resource-reference embeds a resource: a text one's text reaches the text reader, a
    blob one is kept as base64 and named as not text."""
    outcome = CLIENT.call_tool(endpoint, "get-resource-reference", {"resourceType": kind, "resourceId": 1})
    (resource,) = [block["resource"] for block in outcome.content if block["type"] == "resource"]
    assert field in resource and not outcome.is_error
    if field == "text":
        assert resource["text"] in outcome.text
    else:
        assert base64.b64decode(resource["blob"]).startswith(b"Resource 1")
        assert "not text]" in outcome.text


def test_structured_content_is_checked_against_the_listed_output_schema(endpoint: Endpoint) -> None:
    """get-structured-content lists an outputSchema; its answer conforms and is kept."""
    (listed,) = [tool for tool in CLIENT.list_tools(endpoint) if tool["name"] == "get-structured-content"]
    outcome = CLIENT.call_tool(
        endpoint, "get-structured-content", {"location": "Chicago"}, output_schema=listed["outputSchema"]
    )
    assert outcome.structured == {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert not outcome.is_error


def test_structured_content_that_misses_a_stricter_schema_is_an_error(endpoint: Endpoint) -> None:
    """Against a schema the answer does not meet, the outcome is an error naming the mismatch."""
    strict = {"type": "object", "properties": {"humidity": {"type": "string"}}}
    outcome = CLIENT.call_tool(
        endpoint, "get-structured-content", {"location": "Chicago"}, output_schema=strict
    )
    assert outcome.is_error and outcome.mismatch == "at $.humidity: 82 is not of type 'string'"


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


def test_a_long_running_tool_reports_its_progress(endpoint: Endpoint) -> None:
    """With on_progress the call carries a progressToken; each step the server reports arrives,
    in order, before the result."""
    seen: list[Progress] = []
    outcome = CLIENT.call_tool(
        endpoint, "trigger-long-running-operation", {"duration": 1, "steps": 4}, on_progress=seen.append
    )
    assert not outcome.is_error and "Steps: 4" in outcome.text
    assert [(p.progress, p.total) for p in seen] == [(1, 4), (2, 4), (3, 4), (4, 4)]
