"""A hostile answer can end an operation only in McpTransportError naming the server,
never in another exception escaping the client (review of issue #3)."""

from __future__ import annotations

import json

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.wire.eventstream import EventStreamDecoder

from ..scripted import URL, ScriptedServer

JSON = {"Content-Type": "application/json"}
SSE = {"Content-Type": "text/event-stream"}


def _failure(mock, clock, method: str, answer: tuple[int, dict[str, str], str | bytes]) -> McpTransportError:
    server = ScriptedServer(clock, overrides={method: answer})  # type: ignore[dict-item]
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL, budget_seconds=5), "echo"
        )
    assert caught.value.server == "demo" and "'demo'" in str(caught.value)
    return caught.value


def _initialize_result(result: object) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result})


@pytest.mark.parametrize(
    "answer",
    [(200, JSON, "[" * 100_000 + "]" * 100_000), (200, SSE, "data: " + "[" * 100_000 + "\n\n")],
    ids=["json-body", "event-stream"],
)
def test_json_nested_past_the_recursion_limit_is_malformed(mock, clock, answer) -> None:
    """100 000 nested arrays (200 KB, well under the size cap) are 'malformed', not a RecursionError."""
    assert _failure(mock, clock, "tools/call", answer).kind == "malformed"


@pytest.mark.parametrize(
    "version", [[], {}, ["2025-06-18"], 20250618], ids=["empty-list", "object", "list", "number"]
)
def test_a_protocol_version_that_is_no_string_is_malformed(mock, clock, version: object) -> None:
    """initialize choosing a list, object or number as its revision is 'malformed', not a TypeError."""
    error = _failure(mock, clock, "initialize", (200, JSON, _initialize_result({"protocolVersion": version})))
    assert error.kind == "malformed" and "revision" in str(error)


@pytest.mark.parametrize(
    "retry", ["9" * 5000, "9" * 400, "86400001"], ids=["5000-digits", "400-digits", "a-day"]
)
def test_an_absurd_retry_interval_is_refused_as_not_fitting(mock, clock, retry: str) -> None:
    """An event stream closed early whose ``retry`` is thousands of digits long ends in
    'interrupted' (resuming would not fit the budget), not ValueError or OverflowError."""
    stream = f"id: ev-1\nretry: {retry}\ndata:\n\n"
    error = _failure(mock, clock, "tools/call", (200, SSE, stream))
    assert error.kind == "interrupted" and "would not fit" in str(error)


@pytest.mark.parametrize("retry", ["\u00b2", "\u0663", "1e3", "-5"])
def test_a_retry_field_of_anything_but_ascii_digits_is_ignored(retry: str) -> None:
    """WHATWG: only ASCII digits set the retry interval; a superscript or Arabic-Indic digit
    (which ``str.isdigit`` accepts and ``int`` may not) leaves it unset instead of raising."""
    decoder = EventStreamDecoder()
    assert decoder.feed(f"id: x\nretry: {retry}\ndata:\n\n".encode()) == []
    assert decoder.retry_ms is None and decoder.last_event_id == "x"


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"\xff\xfe"}]}}',
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"a\x00b"}]}}',
        b"[1, 2, 3]",
        b"[]",
        b'"just a string"',
        b'{"jsonrpc":"2.0","id":"2","result":{}}',
        b'{"jsonrpc":"2.0","id":true,"result":{}}',
        b'{"jsonrpc":"2.0","id":2,"result":[]}',
        b'{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":' + b"1" * 5000 + b"}}",
    ],
    ids=[
        "invalid-utf8",
        "raw-nul",
        "list-of-numbers",
        "empty-list",
        "string",
        "string-id",
        "boolean-id",
        "result-a-list",
        "five-thousand-digit-number",
    ],
)
def test_a_hostile_json_body_is_malformed(mock, clock, body: bytes) -> None:
    """Invalid UTF-8, a raw NUL, JSON that is a list or a string, an id that is not ours,
    a result that is no object, a number too long to convert: each is 'malformed'."""
    assert _failure(mock, clock, "tools/call", (200, JSON, body)).kind == "malformed"


@pytest.mark.parametrize("stream", ["data: \x00\n\n", "data: not json\n\n"], ids=["nul-data", "not-json"])
def test_a_hostile_event_stream_is_malformed(mock, clock, stream: str) -> None:
    """An event stream with NUL data or non-JSON data is 'malformed'."""
    assert _failure(mock, clock, "tools/call", (200, SSE, stream)).kind == "malformed"


def test_an_event_stream_of_no_data_that_ends_is_interrupted(mock, clock) -> None:
    """An event stream of empty events and comments that ends without an answer (and without an
    event id) is 'interrupted': the call was accepted and may have run."""
    error = _failure(mock, clock, "tools/call", (200, SSE, "event: message\n\n: keep-alive\n\n"))
    assert error.kind == "interrupted" and "no event id" in str(error)


def test_server_name_and_version_that_are_no_strings_are_rendered_clean(mock, clock) -> None:
    """A serverInfo whose name is an object and version a long list still gives a clean, clipped report."""
    info = {"name": {"evil": "\x1b[2J"}, "version": list(range(500))}
    server = ScriptedServer(
        clock,
        overrides={
            "initialize": (
                200,
                JSON,
                _initialize_result({"protocolVersion": "2025-11-25", "serverInfo": info}),
            )
        },
    )
    server.install(mock)
    report = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).ping(
        Endpoint(identifier="demo", url=URL)
    )
    assert report.reachable and "\x1b" not in report.server_name
    assert report.server_name == "{'evil': '\\x1b[2J'}"  # escaped by repr: no longer a control
    assert len(report.server_version) == 100 and report.server_version.endswith("…")


def test_a_hostile_redirect_target_is_cleaned_and_clipped(mock, clock) -> None:
    """A Location with an escape sequence, a line break and 5000 characters reaches the
    message as one clean line, the target clipped to 200 characters."""
    location = "http://x.test/\x1b[2J\r\nInjected: yes/" + "a" * 5000
    error = _failure(mock, clock, "tools/call", (302, {"Location": location}, ""))
    message = str(error)
    assert error.kind == "redirect" and "\x1b" not in message and "\n" not in message
    assert "a" * 200 not in message and "a" * 150 in message


def test_a_hostile_content_type_is_cleaned_and_clipped(mock, clock) -> None:
    """A Content-Type of 5000 characters with control characters is named clean and short."""
    error = _failure(mock, clock, "tools/call", (200, {"Content-Type": "text/\x07" + "h" * 5000}, "<html>"))
    message = str(error)
    assert error.kind == "content_type" and "\x07" not in message
    # The media type clipped to 60 characters; the rest says the accepted call may have run.
    assert len(message) < 220 and "text/hhh" in message and "may have run" in message


def test_an_rpc_error_message_is_clipped_to_two_hundred_characters(mock, clock) -> None:
    """The server's own error message reaches ours clipped to exactly 200 characters."""
    answer = {"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "m" * 5000}}
    message = str(_failure(mock, clock, "tools/call", (200, JSON, json.dumps(answer))))
    assert "m" * 199 + "…" in message and "m" * 200 not in message
