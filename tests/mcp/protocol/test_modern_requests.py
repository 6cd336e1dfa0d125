"""2026-07-28 requests: Mcp-Param-* headers from x-mcp-header, invalid schemas refused before
sending, resultType input_required, and the era cache's key and lifetime rules."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.eras import EraCache, cache_key, lifetime_seconds
from nr_llm.mcp.protocol.param_headers import encode_value, param_headers

from ..scripted import URL, FakeClock, ScriptedServer
from .test_eras import MODERN, _discover

SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "query": {"type": "string"},
        "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
    },
}


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        (" padded ", None),
        ("Hello, 世界", None),
        ("line1\r\nline2", None),
        ("\tindented", None),
        ("=?base64?abc?=", None),
    ],
)
def test_values_are_plain_or_in_the_base64_sentinel(value: str, sent: str | None) -> None:
    """Visible ASCII without edge spaces goes as is; anything else (and a value that looks like
    the sentinel) is wrapped, and decodes back to the exact value."""
    encoded = encode_value(value)
    if sent is not None:
        assert encoded == sent
    else:
        assert encoded.startswith("=?base64?") and encoded.endswith("?=")
        assert base64.b64decode(encoded[9:-2]).decode() == value


def test_annotated_arguments_become_headers_and_null_is_omitted() -> None:
    """Strings, integers and booleans (true/false) of annotated properties, nested ones by their
    path; unannotated and null arguments send nothing."""
    headers = param_headers(
        "t",
        SCHEMA,
        {"region": "eu", "priority": 42, "verbose": None, "query": "SELECT 1", "nested": {"zone": "b"}},
        "demo",
    )
    assert headers == {"Mcp-Param-Region": "eu", "Mcp-Param-Priority": "42", "Mcp-Param-Zone": "b"}
    assert param_headers("t", SCHEMA, {"verbose": False}, "demo") == {"Mcp-Param-Verbose": "false"}


@pytest.mark.parametrize(
    "bad",
    [
        {"v": {"type": "string", "x-mcp-header": ""}},
        {"v": {"type": "string", "x-mcp-header": "My Region"}},
        {"v": {"type": "string", "x-mcp-header": "Region:Primary"}},
        {"v": {"type": "string", "x-mcp-header": "Région"}},
        {"v": {"type": "string", "x-mcp-header": "Region\t1"}},
        {"v": {"type": "string", "x-mcp-header": 7}},
        {"v": {"type": "object", "x-mcp-header": "Data"}},
        {"v": {"type": "array", "x-mcp-header": "Items"}},
        {"v": {"type": "null", "x-mcp-header": "Nil"}},
        {"v": {"type": "number", "x-mcp-header": "Ratio"}},
        {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"},
        },
        {"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "Deep"}}},
    ],
)
def test_an_invalid_annotation_refuses_the_tool_before_anything_is_sent(mock, clock, bad) -> None:
    """invalid_tool, naming the tool; not one request reaches the server (not even a probe)."""
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    schema = {"type": "object", "properties": bad}
    with pytest.raises(McpTransportError) as caught:
        client.call_tool(Endpoint(identifier="demo", url=URL), "lookup", {"v": "x"}, input_schema=schema)
    assert caught.value.kind == "invalid_tool"
    assert "'lookup'" in str(caught.value) and "x-mcp-header" in str(caught.value)
    assert len(mock.calls) == 0


def _modern_server(clock: FakeClock, era_cache: EraCache) -> ScriptedServer:
    era_cache.clear()
    server = ScriptedServer(clock, session_id=None)
    server.overrides["server/discover"] = _discover()
    return server


def test_param_headers_reach_the_modern_call(mock, clock, era_cache) -> None:
    """The call carries Mcp-Param-* for its annotated arguments; the probe carries none."""
    server = _modern_server(clock, era_cache)
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    client.call_tool(
        Endpoint(identifier="demo", url=URL), "t", {"region": "Hello, 世界"}, input_schema=SCHEMA
    )
    probe, call = server.seen
    assert not any(name.startswith("Mcp-Param-") for name in probe.headers)
    assert call.headers["Mcp-Param-Region"] == encode_value("Hello, 世界")


def test_the_handshake_era_sends_no_param_headers(mock, clock) -> None:
    """Headers are the 2026 era's: a handshake-era call sends the arguments in the body only."""
    server = ScriptedServer(clock, session_id=None)
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    client.call_tool(Endpoint(identifier="demo", url=URL), "t", {"region": "eu"}, input_schema=SCHEMA)
    assert server.methods == ["initialize", "notifications/initialized", "tools/call"]
    assert not any(name.startswith("Mcp-Param-") for seen in server.seen for name in seen.headers)


INPUT_REQUIRED: dict[str, Any] = {
    "resultType": "input_required",
    "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "sure?"}}},
    "requestState": '{"opaque": 1}',
}


def test_input_required_without_a_responder_is_a_typed_failure(mock, clock, era_cache) -> None:
    """The server asked for input this client cannot give: input_required, naming what was asked."""
    server = _modern_server(clock, era_cache)
    server.call_result = INPUT_REQUIRED
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    with pytest.raises(McpTransportError) as caught:
        client.call_tool(Endpoint(identifier="demo", url=URL), "t")
    assert caught.value.kind == "input_required"
    assert "elicitation/create" in str(caught.value)
    assert server.methods == ["server/discover", "tools/call"]


class Confirming:
    capabilities: dict[str, Any] = {"elicitation": {}}

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def answer(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(input_requests)
        return {"confirm": {"action": "accept", "content": {"ok": True}}}


def test_a_responder_answers_and_the_request_is_repeated(mock, clock, era_cache) -> None:
    """The retry has a new id, the responses, the server's requestState byte for byte, and the
    responder's capabilities in _meta; its complete result is the outcome."""
    server = _modern_server(clock, era_cache)
    answers: list[dict[str, Any]] = [
        INPUT_REQUIRED,
        {"resultType": "complete", "content": [{"type": "text", "text": "done"}]},
    ]
    original = server._answer

    def answer(request: Any) -> Any:
        body = json.loads(request.body)
        if body.get("method") == "tools/call":
            server.call_result = answers.pop(0)
        return original(request)

    server._answer = answer  # type: ignore[method-assign]
    server.install(mock)
    responder = Confirming()
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    outcome = client.call_tool(Endpoint(identifier="demo", url=URL), "t", {"x": 1}, responder=responder)
    assert outcome.text == "done"
    first, retry = server.seen[1], server.seen[2]
    assert first.body["id"] != retry.body["id"]
    assert "requestState" not in first.body["params"]
    assert retry.body["params"]["requestState"] == '{"opaque": 1}'
    assert retry.body["params"]["inputResponses"] == {
        "confirm": {"action": "accept", "content": {"ok": True}}
    }
    assert retry.body["params"]["arguments"] == {"x": 1}
    assert retry.body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {}}
    assert responder.asked == [INPUT_REQUIRED["inputRequests"]]


def test_a_result_without_result_type_is_complete(mock, clock, era_cache) -> None:
    """No resultType means complete (the default): the outcome, no retry."""
    server = _modern_server(clock, era_cache)
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    assert client.call_tool(Endpoint(identifier="demo", url=URL), "t").text == "ok"
    assert server.methods == ["server/discover", "tools/call"]


def test_the_cache_key_keeps_the_query_only_as_a_digest() -> None:
    """Userinfo and fragment never become part of the key; the query does, as a keyed digest:
    two tenants' queries are two keys, one query is one key, and no part of it is readable
    (issue 18, finding 11); host case does not matter."""
    keyed = cache_key("https://user:pw@MCP.example.com:8443/mcp?key=S3CRET-tok#x")
    assert keyed.startswith("https://mcp.example.com:8443/mcp?query-digest=")
    assert "S3CRET" not in keyed and "key=" not in keyed and "user" not in keyed and "pw" not in keyed
    assert keyed == cache_key("https://mcp.example.com:8443/mcp?key=S3CRET-tok")
    tenant_a, tenant_b = (
        cache_key("https://h.example/mcp?tenant=a"),
        cache_key("https://h.example/mcp?tenant=b"),
    )
    assert tenant_a != tenant_b and "tenant" not in tenant_a + tenant_b
    assert cache_key("https://h.example/mcp") == "https://h.example/mcp"
    assert cache_key("http://[::1]:9/mcp") == "http://[::1]:9/mcp"
    assert cache_key("https://a.example") != cache_key("https://b.example")


def test_lifetimes_honour_a_positive_ttl_and_are_bounded() -> None:
    """ttlMs > 0 wins (capped at a day); 0, absent, negative or not an integer: the default."""
    assert lifetime_seconds(5000, 600) == 5
    assert lifetime_seconds(10**12, 600) == 86_400
    for ttl in (0, None, -5, "5000", True, 1.5):
        assert lifetime_seconds(ttl, 600) == 600


def test_the_cache_forgets_expired_and_least_recent_entries() -> None:
    """An entry is gone at its expiry; past the maximum the oldest stored is dropped."""
    cache = EraCache(maximum=2)
    cache.remember("a", "modern", MODERN, 10, 0)
    assert cache.get("a", 9_999_999_999) is not None and cache.get("a", 10_000_000_000) is None
    for key in ("a", "b", "c"):
        cache.remember(key, "handshake", "", 10, 0)
    assert [cache.get(key, 0) is not None for key in ("a", "b", "c")] == [False, True, True]


def test_a_json_rpc_error_in_a_4xx_reaches_the_caller(mock, clock, era_cache) -> None:
    """The body of a 400 is read: rpc_error with the code, the HTTP status and the server's message."""
    server = _modern_server(clock, era_cache)
    body = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "argument 'x' is required"}}
    server.overrides["tools/call"] = (400, {"Content-Type": "application/json"}, json.dumps(body))
    server.install(mock)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    with pytest.raises(McpTransportError) as caught:
        client.call_tool(Endpoint(identifier="demo", url=URL), "t")
    error = caught.value
    assert (error.kind, error.code, error.http_status) == ("rpc_error", -32602, 400)
    assert "argument 'x' is required" in str(error) and "HTTP 400" in str(error)
    assert server.methods == ["server/discover", "tools/call"]


def test_a_4xx_body_over_the_cap_is_not_read_past_it(mock, clock, era_cache) -> None:
    """A 4xx with an endless JSON body stops at 2 MiB (too_large), like any other answer."""
    era_cache.clear()
    mock.post(URL, status=400, body=b"{" + b" " * (3 * 1024 * 1024), content_type="application/json")
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock)
    with pytest.raises(McpTransportError) as caught:
        client.call_tool(Endpoint(identifier="demo", url=URL), "t")
    assert caught.value.kind == "too_large"
    assert len(mock.calls) == 1


def test_a_param_header_never_replaces_the_credential(mock, clock, era_cache) -> None:
    """A schema naming the credential's own header: the credential is what is sent."""
    era_cache.clear()
    server = _modern_server(clock, era_cache)
    server.install(mock)
    endpoint = Endpoint(
        identifier="demo",
        url=URL,
        credential="s3cret",
        auth_placement="header",
        auth_header_name="Mcp-Param-Key",
    )
    schema = {"type": "object", "properties": {"key": {"type": "string", "x-mcp-header": "Key"}}}
    McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
        endpoint, "t", {"key": "forged"}, input_schema=schema
    )
    assert server.seen[-1].headers["Mcp-Param-Key"] == "s3cret"
