"""Every way an answer can be wrong is one McpTransportError naming the server."""

from __future__ import annotations

import json
import traceback

import pytest
import responses

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.content import ContentLimits

from ..scripted import URL, FakeClock, ScriptedServer


def _call(
    mock: responses.RequestsMock, clock: FakeClock, answer: tuple[int, dict[str, str], str]
) -> McpTransportError:
    server = ScriptedServer(clock, overrides={"tools/call": answer})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL), "echo"
        )
    assert caught.value.server == "demo" and "'demo'" in str(caught.value)
    return caught.value


def _sse(*messages: object) -> str:
    return "".join(f"event: message\ndata: {json.dumps(message)}\n\n" for message in messages)


JSON = {"Content-Type": "application/json"}
SSE = {"Content-Type": "text/event-stream"}


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_server_error_status_is_status(mock, clock, status: int) -> None:
    """A 5xx answer is kind 'status' with the code in the message."""
    error = _call(mock, clock, (status, JSON, "{}"))
    assert error.kind == "status" and f"HTTP {status}" in str(error)


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_credential_is_status_pointing_at_the_credential(mock, clock, status: int) -> None:
    """401/403 are kind 'status' and tell the operator to check the credential."""
    error = _call(mock, clock, (status, JSON, "{}"))
    assert error.kind == "status" and "credential" in str(error)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_never_followed(mock, clock, status: int) -> None:
    """A 3xx is kind 'redirect'; the target is never requested."""
    target = mock.add(responses.POST, "http://elsewhere.test/mcp", json={})
    error = _call(mock, clock, (status, {"Location": "http://elsewhere.test/mcp"}, ""))
    assert error.kind == "redirect" and "elsewhere.test" in str(error)
    assert target.call_count == 0


def test_a_json_rpc_error_is_rpc_error_with_the_servers_message_cleaned(mock, clock) -> None:
    """An error object is kind 'rpc_error'; its message is control-stripped and clipped to 200."""
    hostile = "bad\x1b[31m\nthing " + "x" * 500
    error = _call(
        mock,
        clock,
        (200, JSON, json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": hostile}})),
    )
    assert error.kind == "rpc_error"
    message = str(error)
    assert "\x1b" not in message and "\n" not in message
    assert "bad[31m thing" in message and "x" * 250 not in message


def test_an_html_page_is_content_type(mock, clock) -> None:
    """A login page or proxy error in HTML is kind 'content_type'."""
    error = _call(mock, clock, (200, {"Content-Type": "text/html"}, "<html>login</html>"))
    assert error.kind == "content_type" and "text/html" in str(error)


def test_an_event_stream_without_an_answer_is_interrupted(mock, clock) -> None:
    """A stream that carries only a notification and ends (no event id to resume from) is kind
    'interrupted', accepted, saying the tool may have run, as a plain McpTransportError
    (picklable, no private subclass)."""
    error = _call(mock, clock, (200, SSE, _sse({"jsonrpc": "2.0", "method": "notifications/message"})))
    assert error.kind == "interrupted" and error.accepted
    assert "event stream ended before the answer" in str(error) and "may have run" in str(error)
    assert type(error) is McpTransportError


def test_a_body_with_neither_result_nor_error_is_malformed(mock, clock) -> None:
    """A response to our id with neither member is kind 'malformed'."""
    error = _call(mock, clock, (200, JSON, json.dumps({"jsonrpc": "2.0", "id": 2})))
    assert error.kind == "malformed" and "neither" in str(error)


def test_an_empty_body_is_malformed(mock, clock) -> None:
    """An empty JSON body is kind 'malformed'."""
    error = _call(mock, clock, (200, JSON, ""))
    assert error.kind == "malformed" and "empty" in str(error)


def test_a_body_that_is_not_json_is_malformed(mock, clock) -> None:
    """Invalid JSON is kind 'malformed'."""
    assert _call(mock, clock, (200, JSON, "{not json")).kind == "malformed"


def test_an_answer_to_another_request_is_malformed(mock, clock) -> None:
    """JSON answering an id we did not send is kind 'malformed'."""
    error = _call(mock, clock, (200, JSON, json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}})))
    assert error.kind == "malformed"


def test_an_accepted_request_without_a_body_is_malformed(mock, clock) -> None:
    """A 202 to a request (not a notification) is kind 'malformed'."""
    assert _call(mock, clock, (202, {}, "")).kind == "malformed"


def test_a_body_over_two_mebibytes_is_too_large(mock, clock) -> None:
    """A 3 MiB answer is kind 'too_large'."""
    big = json.dumps(
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "x" * (3 << 20)}]}}
    )
    error = _call(mock, clock, (200, JSON, big))
    assert error.kind == "too_large" and "2 MiB" in str(error)


def test_a_body_just_under_the_cap_is_read(mock, clock) -> None:
    """An answer just under 2 MiB is accepted whole (block caps raised: this is about the body cap)."""
    text = "y" * ((2 << 20) - 200)
    body = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}]}})
    server = ScriptedServer(clock, overrides={"tools/call": (200, JSON, body)})
    server.install(mock)
    limits = ContentLimits(block_bytes=4 << 20, total_bytes=4 << 20)
    outcome = McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=clock, result_limits=limits
    ).call_tool(Endpoint(identifier="demo", url=URL), "echo")
    assert outcome.text == text


def test_an_event_stream_skips_server_requests_and_notifications(mock, clock) -> None:
    """Messages before the answer (a log notification, a server ping request) are skipped."""
    stream = ": comment\n\n" + _sse(
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "streamed"}]}},
    )
    server = ScriptedServer(clock, overrides={"tools/call": (200, SSE, stream)})
    server.install(mock)
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        Endpoint(identifier="demo", url=URL), "echo"
    )
    assert outcome.text == "streamed"


@pytest.mark.parametrize(
    "stream",
    ["\ufeffdata: {answer}\n\n", "data: {answer}\r\r"],
    ids=["byte-order-mark-first", "lone-cr-last"],
)
def test_an_answer_at_either_edge_of_a_stream_is_read(mock, clock, stream: str) -> None:
    """The answer is read when a byte order mark opens the stream, and when the stream
    closes on the lone CR that ends the answer's event (held back as half a CRLF until then)."""
    answer = json.dumps(
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "edge"}]}}
    )
    server = ScriptedServer(clock, overrides={"tools/call": (200, SSE, stream.format(answer=answer))})
    server.install(mock)
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        Endpoint(identifier="demo", url=URL), "echo"
    )
    assert outcome.text == "edge"


def test_an_answer_inside_a_batch_is_found(mock, clock) -> None:
    """A JSON array holding a notification and our answer yields the answer."""
    batch = [
        {"jsonrpc": "2.0", "method": "notifications/x"},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": []}},
    ]
    server = ScriptedServer(clock, overrides={"tools/call": (200, JSON, json.dumps(batch))})
    server.install(mock)
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        Endpoint(identifier="demo", url=URL), "echo"
    )
    assert outcome.text == ""


def test_an_unknown_protocol_revision_is_malformed(mock, clock) -> None:
    """A server choosing a revision this client does not speak ends the operation before the work."""
    server = ScriptedServer(clock, protocol_version="1999-01-01", session_id=None)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL), "echo"
        )
    assert caught.value.kind == "malformed" and "1999-01-01" in str(caught.value)
    assert server.methods == ["initialize"]


def test_an_unreachable_server_is_unreachable_without_leaking_the_url_query(clock) -> None:
    """A refused connection is kind 'unreachable'; the URL (and any secret in it) is not quoted."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = Endpoint(identifier="demo", url=f"http://127.0.0.1:{port}/mcp?key=SECRET123")
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            endpoint, "echo"
        )
    assert caught.value.kind == "unreachable"
    assert "SECRET123" not in str(caught.value) and "SECRET123" not in repr(caught.value)
    # Nor in the traceback a logger.exception() would print (causes and contexts included).
    assert "SECRET123" not in "".join(traceback.format_exception(caught.value))
