"""MCP client spans, trace context and the duration metric, against real servers: the official
SDK server (both eras) and the adversarial peer's careless ``tattle`` server."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.telemetry import DURATION_BUCKETS, DURATION_METRIC, session_digest
from nr_llm.mcp.wire.telemetry import MESSAGE_CHARS
from tests.catalogue_peers import closed_port_url
from tests.otel import Otel, attributes_of, otel
from tests.peers import running, sdk_server

__all__ = ["otel"]

pytestmark = pytest.mark.e2e

SECRET = "s3cr3t-token-of-this-site"


@pytest.fixture(scope="module")
def modern_url() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture(scope="module")
def handshake_url() -> Iterator[str]:
    """A stateful server of the handshake era: sessions, initialize, DELETE."""
    with sdk_server("--no-discover") as url:
        yield url


@pytest.fixture(scope="module")
def tattle_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        yield f"http://127.0.0.1:{port}/tattle/0/mcp"


def _client() -> McpClient:
    return McpClient(connection=ConnectionSettings(allow_private_networks=True))


def _endpoint(url: str, **extra: Any) -> Endpoint:
    return Endpoint(identifier="sdk", url=url, budget_seconds=20, **extra)


def _log(url: str) -> list[dict[str, Any]]:
    return requests.get(url.replace("/mcp", "/requests"), timeout=10).json()  # type: ignore[no-any-return]


def test_a_modern_tool_call_is_a_client_span_per_request_with_the_conventions_attributes(
    otel: Otel, modern_url: str
) -> None:
    """server/discover and "tools/call echo" are CLIENT spans with mcp.method.name, the
    revision, the request id, server address and port, http, and the tool's name."""
    outcome = _client().call_tool(_endpoint(modern_url), "echo", {"text": "hi"})
    assert outcome.text == "hi"
    assert [span.name for span in otel.spans()] == ["server/discover", "tools/call echo"]
    discover, call = otel.spans()
    port = int(modern_url.rsplit(":", 1)[1].split("/")[0])
    assert call.kind is SpanKind.CLIENT and discover.kind is SpanKind.CLIENT
    assert attributes_of(call) == {
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2026-07-28",
        "jsonrpc.request.id": "2",  # the probe was 1
        "server.address": "127.0.0.1",
        "server.port": port,
        "network.protocol.name": "http",
        "network.transport": "tcp",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "nr_llm.server": "sdk",
    }
    assert attributes_of(discover)["mcp.method.name"] == "server/discover"
    assert "gen_ai.tool.name" not in attributes_of(discover)
    assert call.status.status_code is StatusCode.UNSET


def test_each_request_carries_its_spans_trace_context_to_the_server(otel: Otel, modern_url: str) -> None:
    """The server reads in params._meta the traceparent of the request's own CLIENT span (so
    its span becomes that span's child), within the caller's trace."""
    before = len(_log(modern_url))
    with otel.provider.get_tracer("test").start_as_current_span("agent turn") as turn:
        _client().call_tool(_endpoint(modern_url), "echo", {"text": "traced"})
    seen = _log(modern_url)[before:]
    spans = {span.name: span for span in otel.spans()}
    for entry in seen:
        span = spans[f"{entry['method']} echo" if entry["method"] == "tools/call" else entry["method"]]
        context = span.get_span_context()
        assert context is not None
        flags = f"{context.trace_flags:02x}"
        assert entry["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}"
        assert context.trace_id == turn.get_span_context().trace_id
        assert span.parent is not None and span.parent.span_id == turn.get_span_context().span_id
    assert [entry["method"] for entry in seen] == ["server/discover", "tools/call"]


def test_the_handshake_era_names_initialize_and_its_session_by_digest(otel: Otel, handshake_url: str) -> None:
    """initialize, notifications/initialized, tools/call: one span each; the session id is a
    digest (never the id itself), the same on every span of the session; the revision the
    server chose is on the initialize span."""
    _client().call_tool(_endpoint(handshake_url), "echo", {"text": "hi"})
    names = [span.name for span in otel.spans()]
    assert names == ["server/discover", "initialize", "notifications/initialized", "tools/call echo"]
    discover, initialize, initialized, call = otel.spans()
    assert attributes_of(discover)["error.type"] == "-32601"
    assert attributes_of(discover)["rpc.response.status_code"] == "-32601"
    assert discover.status.status_code is StatusCode.ERROR
    assert not discover.status.description  # the server's text is content: not captured here
    assert attributes_of(initialize)["mcp.protocol.version"] == "2025-11-25"
    session = [entry["session"] for entry in _log(handshake_url) if entry["method"] == "tools/call"][-1]
    assert session
    digests = {attributes_of(span)["mcp.session.id"] for span in (initialize, initialized, call)}
    assert digests == {session_digest(session)}
    assert all(session not in str(attributes_of(span)) for span in otel.spans())
    assert "jsonrpc.request.id" not in attributes_of(initialized)  # a notification has no id


def test_an_is_error_answer_is_a_tool_error_span_and_metric(otel: Otel, modern_url: str) -> None:
    """isError: error.type tool_error, span status ERROR, and the same on the metric's point."""
    outcome = _client().call_tool(_endpoint(modern_url), "fail", {"reason": "no stock"})
    assert outcome.is_error
    (call,) = otel.named("tools/call fail")
    assert attributes_of(call)["error.type"] == "tool_error"
    assert call.status.status_code is StatusCode.ERROR
    points = {point.attributes.get("mcp.method.name"): point for point in otel.points(DURATION_METRIC)}
    assert points["tools/call"].attributes["error.type"] == "tool_error"
    assert "error.type" not in points["server/discover"].attributes


def test_the_duration_histogram_has_the_conventions_buckets_and_attributes(
    otel: Otel, modern_url: str
) -> None:
    """mcp.client.operation.duration, in seconds, with the convention's explicit buckets, one
    point per method and server, counting every request."""
    client = _client()
    for _ in range(3):
        client.call_tool(_endpoint(modern_url), "echo", {"text": "x"})
    points = otel.points(DURATION_METRIC)
    calls = [point for point in points if point.attributes["mcp.method.name"] == "tools/call"]
    (call,) = calls
    assert call.count == 3
    assert call.bounds == DURATION_BUCKETS
    assert call.attributes["server.address"] == "127.0.0.1"
    assert call.attributes["gen_ai.tool.name"] == "echo"
    assert 0 < call.sum < 3 * 20  # seconds, not milliseconds
    assert "jsonrpc.request.id" not in call.attributes  # no per-request value on a metric


def test_a_server_that_cannot_be_reached_is_an_error_span(otel: Otel) -> None:
    """No answer: error.type is the client's error kind."""
    with pytest.raises(McpTransportError):
        _client().call_tool(_endpoint(closed_port_url()), "echo", {})
    (discover,) = otel.spans()
    assert attributes_of(discover)["error.type"] == "unreachable"
    assert discover.status.status_code is StatusCode.ERROR
    (point,) = otel.points(DURATION_METRIC)
    assert point.attributes["error.type"] == "unreachable"


def test_a_server_echoing_the_credential_leaves_no_secret_in_any_span(otel: Otel, tattle_url: str) -> None:
    """A careless server quotes the bearer token it was sent in its error message: where content
    capture allows the server's text, the span's status description says what it said, the token
    masked; no attribute holds it."""
    endpoint = _endpoint(tattle_url, credential=SECRET, auth_placement="bearer", capture_content=True)
    with pytest.raises(McpTransportError):
        _client().call_tool(endpoint, "echo", {})
    assert otel.spans()
    for span in otel.spans():
        assert SECRET not in str(attributes_of(span))
        assert SECRET not in (span.status.description or "")
    described = [span.status.description or "" for span in otel.spans()]
    assert any("invalid credential" in text and "[credential]" in text for text in described), described


def test_a_ten_megabyte_argument_or_tool_name_bounds_every_attribute(otel: Otel, modern_url: str) -> None:
    """Whatever size a caller's values, span names and attributes stay small."""
    huge = "x" * (10 * 1024 * 1024)
    with pytest.raises(McpTransportError):
        # Over the server's request limit or refused as unknown: either way a failure.
        _client().call_tool(_endpoint(modern_url), huge, {"text": huge})
    assert [span.name[:12] for span in otel.spans()] == ["server/disco", "tools/call x"]
    for span in otel.spans():
        assert len(span.name) < 300
        for value in attributes_of(span).values():
            assert len(str(value)) <= 256
        assert len(span.status.description or "") <= MESSAGE_CHARS


def test_without_an_sdk_nothing_is_recorded_and_nothing_is_injected(modern_url: str) -> None:
    """With the API alone (no provider installed), the call runs and sends no trace context."""
    assert not trace.get_current_span().get_span_context().is_valid
    before = len(_log(modern_url))
    assert _client().call_tool(_endpoint(modern_url), "echo", {"text": "quiet"}).text == "quiet"
    assert all(entry["traceparent"] is None for entry in _log(modern_url)[before:])


class _BrokenPropagator(TraceContextTextMapPropagator):
    """A site's propagator with a bug."""

    def inject(self, carrier: Any, context: Any = None, setter: Any = None) -> None:
        raise RuntimeError("propagator bug")


def test_a_failing_propagator_changes_nothing_the_call_does(
    otel: Otel, modern_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Telemetry is never the reason a call fails: the request goes without trace context, and
    the failure is logged."""
    monkeypatch.setattr(propagate, "_HTTP_TEXT_FORMAT", _BrokenPropagator())
    before = len(_log(modern_url))
    assert _client().call_tool(_endpoint(modern_url), "echo", {"text": "still"}).text == "still"
    assert all(entry["traceparent"] is None for entry in _log(modern_url)[before:])
    assert otel.named("tools/call echo")
    assert ("nr_llm.mcp", 30, "the trace context could not be injected into an MCP request") in (
        caplog.record_tuples
    )


def test_the_sdk_server_joins_the_trace_as_a_child_of_each_request(otel: Otel, tmp_path: Path) -> None:
    """The official SDK server, tracing, reads params._meta: its SERVER span of each message is a
    child of our CLIENT span of that message, in our trace."""
    log = tmp_path / "server-spans.jsonl"
    with sdk_server("--stateless", "--trace-log", str(log)) as url:
        _client().call_tool(_endpoint(url), "echo", {"text": "joined"})
        ours = {span.name: span for span in otel.spans()}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "tools/call echo" not in log.read_text():
            time.sleep(0.05)
    theirs = {entry["name"]: entry for entry in map(json.loads, log.read_text().splitlines())}
    for name in ("server/discover", "tools/call echo"):
        client = ours[name].get_span_context()
        assert client is not None
        assert theirs[name]["kind"] == "SERVER"
        assert theirs[name]["trace_id"] == f"{client.trace_id:032x}"
        assert theirs[name]["parent_id"] == f"{client.span_id:016x}"


def test_a_secret_in_the_servers_url_query_reaches_no_span_or_metric(otel: Otel, modern_url: str) -> None:
    """An API key in the URL's query (some hosted servers take one there): spans and the metric
    carry the host and port only."""
    url = f"{modern_url}?api_key={SECRET}"
    assert _client().call_tool(_endpoint(url), "echo", {"text": "keyed"}).text == "keyed"
    assert len(otel.spans()) == 2
    for span in otel.spans():
        assert SECRET not in span.name + str(attributes_of(span))
    for point in otel.points(DURATION_METRIC):
        assert SECRET not in str(point.attributes)


def test_a_servers_error_text_is_no_status_description_unless_content_is_captured(
    otel: Otel, tattle_url: str
) -> None:
    """A server's error message is content (it often quotes the arguments it was sent): with
    content capture off for the server, no span's status description holds any of it; the error
    type still says what happened. The same server with capture on is described."""
    endpoint = _endpoint(tattle_url, credential=SECRET, auth_placement="bearer")
    with pytest.raises(McpTransportError):
        _client().call_tool(endpoint, "echo", {})
    assert otel.spans()
    for span in otel.spans():
        assert not span.status.description
        assert "invalid credential" not in str(attributes_of(span))
    assert any(span.status.status_code is StatusCode.ERROR for span in otel.spans())
    assert any(attributes_of(span).get("error.type") for span in otel.spans())
