"""Era negotiation on a scripted server with a fake clock: the probe, the verdict, the retry.

The scripted server answers ``server/discover`` as a 2026-07-28 server when told to (an
override); otherwise with a plain result that lists no revision, as a handshake-era server
that knows no such method but answers everything does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
import responses

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.eras import EraCache, cache_key

from ..scripted import URL, FakeClock, ScriptedServer, Seen

MODERN = "2026-07-28"
KEY = cache_key(URL)


@pytest.fixture(autouse=True)
def no_verdict(era_cache: EraCache) -> EraCache:
    era_cache.clear()
    return era_cache


def _discover(ttl_ms: int = 0, versions: list[str] | None = None) -> tuple[int, dict[str, str], str]:
    result = {
        "resultType": "complete",
        "ttlMs": ttl_ms,
        "cacheScope": "private",
        "supportedVersions": [MODERN] if versions is None else versions,
        "capabilities": {"tools": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted-2026", "version": "26"}},
    }
    # Every probe is the first request of its conversation: id 1.
    return (
        200,
        {"Content-Type": "application/json"},
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}),
    )


def _error(status: int, code: int, data: Any = None, request_id: Any = 1) -> tuple[int, dict[str, str], str]:
    error: dict[str, Any] = {"code": code, "message": "no"}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return status, {"Content-Type": "application/json"}, json.dumps(body)


def _modern(clock: FakeClock, **kwargs: Any) -> ScriptedServer:
    server = ScriptedServer(clock, session_id=None, **kwargs)
    server.overrides.setdefault("server/discover", _discover())
    return server


def _client(clock: FakeClock, seconds: float = 600) -> McpClient:
    return McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=clock, era_cache_seconds=seconds
    )


def _endpoint(budget: float = 20) -> Endpoint:
    return Endpoint(identifier="demo", url=URL, budget_seconds=budget)


def test_probe_and_call_share_one_budget(mock, clock) -> None:
    """A 4 s discover leaves the call 16 s of a 20 s budget: grants [20, 16], nothing else sent."""
    server = _modern(clock, seconds={"server/discover": 4})
    server.install(mock)
    outcome = _client(clock).call_tool(_endpoint(), "echo", {"text": "hi"})
    assert outcome.text == "ok"
    assert server.methods == ["server/discover", "tools/call"]
    assert server.grants == [20, 16]


def test_a_probe_that_spends_the_budget_leaves_the_call_unsent(mock, clock) -> None:
    """A discover that takes 19.5 s of 20 leaves under 1 s: the call is not sent
    (deadline_exhausted) and the verdict, learnt before, is kept."""
    server = _modern(clock, seconds={"server/discover": 19.5})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "deadline_exhausted"
    assert server.methods == ["server/discover"]


def test_every_modern_request_describes_itself(mock, clock) -> None:
    """_meta carries revision, capabilities and client info; headers carry the revision, the
    method and the tool name; no session, no initialize, no DELETE."""
    server = _modern(clock)
    server.install(mock)
    _client(clock).call_tool(_endpoint(), "echo", {"text": "hi"})
    for seen in server.seen:
        meta = seen.body["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "nr-llm"
        assert seen.headers["MCP-Protocol-Version"] == MODERN
        assert seen.headers["Mcp-Method"] == seen.rpc_method
        assert "Mcp-Session-Id" not in seen.headers
    call = server.seen[-1]
    assert call.headers["Mcp-Name"] == "echo"
    assert call.body["params"]["arguments"] == {"text": "hi"}


def test_steady_state_is_one_post_per_call(mock, clock) -> None:
    """Once the verdict is known, each further call is exactly one POST."""
    server = _modern(clock)
    server.install(mock)
    client = _client(clock)
    for _ in range(3):
        client.call_tool(_endpoint(), "echo")
    assert server.methods == ["server/discover", "tools/call", "tools/call", "tools/call"]


def test_ping_is_the_discover_and_reports_the_era(mock, clock) -> None:
    """ping against a modern server is one server/discover; the report names revision, era and
    the server identity from the result's _meta."""
    server = _modern(clock)
    server.install(mock)
    report = _client(clock).ping(_endpoint())
    assert server.methods == ["server/discover"]
    assert (report.reachable, report.protocol_version, report.era) == (True, MODERN, "modern")
    assert (report.server_name, report.server_version) == ("scripted-2026", "26")


def test_list_tools_pages_in_the_modern_era(mock, clock) -> None:
    """Pages follow nextCursor with the same envelope, under one budget."""
    pages: dict[str | None, dict[str, Any]] = {
        None: {"tools": [{"name": "a"}], "nextCursor": "c1"},
        "c1": {"tools": [{"name": "b"}]},
    }
    server = _modern(clock, pages=pages, seconds={"tools/list": 2})
    server.install(mock)
    tools = _client(clock).list_tools(_endpoint())
    assert [tool["name"] for tool in tools] == ["a", "b"]
    assert server.methods == ["server/discover", "tools/list", "tools/list"]
    assert server.grants == [20, 20, 18]
    assert server.seen[2].body["params"]["cursor"] == "c1"
    assert server.seen[2].headers["Mcp-Method"] == "tools/list"


def test_unsupported_version_naming_ours_reprobes_once(mock, clock) -> None:
    """-32022 whose data names 2026-07-28: one more probe at that revision, then the call."""
    answers = [_error(400, -32022, {"supported": [MODERN], "requested": MODERN}), _discover()]
    server = _modern(clock)
    server.overrides.pop("server/discover")
    mock.add_callback(responses.POST, URL, callback=lambda request: _record(server, request, answers))
    _client(clock).call_tool(_endpoint(), "echo")
    assert server.methods == ["server/discover", "server/discover", "tools/call"]


def _record(server: ScriptedServer, request: Any, answers: list[tuple[int, dict[str, str], str]]) -> Any:
    """Answer the probes from ``answers`` in turn, everything else as the scripted server."""
    body = json.loads(request.body)
    if body.get("method") == "server/discover":
        server.seen.append(_seen(request, body))
        return answers.pop(0)
    return server._answer(request)


def _seen(request: Any, body: dict[str, Any]) -> Seen:
    return Seen(
        request.method, body.get("method"), dict(request.headers), body, request.req_kwargs["timeout"]
    )


@pytest.mark.parametrize(
    "answer",
    [
        _error(200, -32601),
        _error(400, -32602),
        _error(404, -32601),
        (405, {}, ""),
        (400, {"Content-Type": "text/plain"}, "Bad Request: Missing session ID"),
        (200, {"Content-Type": "application/json"}, json.dumps({"jsonrpc": "2.0", "id": "1", "result": {}})),
        (200, {"Content-Type": "application/json"}, json.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})),
        _discover(versions=["2025-11-25"]),
    ],
    ids=[
        "rpc-error-200",
        "400-invalid-params",
        "404-method-not-found",
        "405-no-body",
        "400-text",
        "string-id",
        "no-supported-versions",
        "only-old-versions",
    ],
)
def test_any_answer_that_shows_no_modern_server_falls_back_to_the_handshake(mock, clock, answer) -> None:
    """The handshake follows the refused probe in the same operation; the verdict is remembered,
    so the next operation sends no probe."""
    server = ScriptedServer(clock, session_id=None, overrides={"server/discover": answer})
    server.install(mock)
    client = _client(clock)
    client.call_tool(_endpoint(), "echo")
    client.call_tool(_endpoint(), "echo")
    handshake = ["initialize", "notifications/initialized", "tools/call"]
    assert server.methods == ["server/discover", *handshake, *handshake]


@pytest.mark.parametrize(
    ("error", "kind"),
    [(requests.ConnectTimeout(), "timeout"), (requests.ConnectionError(), "unreachable")],
)
def test_a_probe_that_gets_no_answer_is_an_error_and_is_not_remembered(mock, clock, error, kind) -> None:
    """No handshake after a failed probe, and the next operation probes again."""
    mock.add(responses.POST, URL, body=error)
    client = _client(clock)
    for _ in range(2):
        with pytest.raises(McpTransportError) as caught:
            client.call_tool(_endpoint(), "echo")
        assert caught.value.kind == kind
    assert [json.loads(call.request.body)["method"] for call in mock.calls] == ["server/discover"] * 2


def test_a_server_error_on_the_probe_is_no_verdict(mock, clock, no_verdict) -> None:
    """HTTP 500 to the probe is a failing server, not an old one: the error stands, nothing remembered."""
    server = ScriptedServer(clock, overrides={"server/discover": (500, {}, "")})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "status" and caught.value.http_status == 500
    assert server.methods == ["server/discover"]
    assert no_verdict.get(KEY, clock.now_ns) is None


def test_a_positive_ttl_is_honoured(mock, clock) -> None:
    """ttlMs 5000: no probe 4 s later, a new probe 6 s later."""
    server = _modern(clock)
    server.overrides["server/discover"] = _discover(ttl_ms=5000)
    server.install(mock)
    client = _client(clock)
    client.call_tool(_endpoint(), "echo")
    clock.advance(4)
    client.call_tool(_endpoint(), "echo")
    clock.advance(2)
    client.call_tool(_endpoint(), "echo")
    assert server.methods == ["server/discover", "tools/call", "tools/call", "server/discover", "tools/call"]


def test_without_a_ttl_the_installation_lifetime_applies(mock, clock) -> None:
    """ttlMs 0: the verdict lasts the configured 600 s (not a probe per call)."""
    server = _modern(clock)
    server.install(mock)
    client = _client(clock, seconds=600)
    client.call_tool(_endpoint(), "echo")
    clock.advance(599)
    client.call_tool(_endpoint(), "echo")
    clock.advance(2)
    client.call_tool(_endpoint(), "echo")
    assert server.methods == ["server/discover", "tools/call", "tools/call", "server/discover", "tools/call"]


def test_a_lifetime_of_zero_probes_before_every_operation(mock, clock) -> None:
    """NR_LLM_MCP_ERA_CACHE_SECONDS=0 (and no ttlMs) remembers nothing."""
    server = _modern(clock)
    server.install(mock)
    client = _client(clock, seconds=0)
    client.call_tool(_endpoint(), "echo")
    client.call_tool(_endpoint(), "echo")
    assert server.methods == ["server/discover", "tools/call"] * 2


def test_a_remembered_modern_era_refused_by_an_old_server_is_retried_the_other_way(
    mock, clock, no_verdict
) -> None:
    """The server went back to the handshake era: its 400 to the modern call proves the call
    was not run; the verdict is dropped, the era learnt again and the call made once, all
    within the one budget."""
    no_verdict.remember(KEY, "modern", MODERN, 600, clock.now_ns)
    server = ScriptedServer(clock, session_id=None)
    modern_refused = [(400, {"Content-Type": "text/plain"}, "Bad Request: Missing session ID")]

    def answer(request: Any) -> Any:
        body = json.loads(request.body)
        if body.get("method") == "tools/call" and "_meta" in body["params"] and modern_refused:
            server.seen.append(_seen(request, body))
            return modern_refused.pop()
        return server._answer(request)

    mock.add_callback(responses.POST, URL, callback=answer)
    outcome = _client(clock).call_tool(_endpoint(), "echo")
    assert outcome.text == "ok"
    assert server.methods == [
        "tools/call",  # modern, refused before running
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/call",  # the one that ran
    ]
    assert no_verdict.get(KEY, clock.now_ns).era == "handshake"


def test_a_remembered_handshake_era_refused_by_a_modern_only_server_is_retried(
    mock, clock, no_verdict
) -> None:
    """initialize answered 400 -32602 (no _meta): the server is modern now; probe and call."""
    no_verdict.remember(KEY, "handshake", "", 600, clock.now_ns)
    server = _modern(clock)
    server.overrides["initialize"] = _error(400, -32602)
    server.install(mock)
    _client(clock).call_tool(_endpoint(), "echo")
    assert server.methods == ["initialize", "server/discover", "tools/call"]
    assert no_verdict.get(KEY, clock.now_ns).era == "modern"


@pytest.mark.parametrize(
    "failure",
    [
        (200, {"Content-Type": "application/json"}, json.dumps({"jsonrpc": "2.0", "id": 99, "result": {}})),
        (502, {}, ""),
    ],
    ids=["answer-to-another-id", "bad-gateway"],
)
def test_a_call_that_may_have_run_is_never_sent_again(mock, clock, no_verdict, failure) -> None:
    """A modern call whose answer does not prove it was not run (a mismatched answer, a 5xx)
    ends in an error; the tool is not called a second time in either era."""
    no_verdict.remember(KEY, "modern", MODERN, 600, clock.now_ns)
    server = _modern(clock)
    server.overrides["tools/call"] = failure
    server.install(mock)
    with pytest.raises(McpTransportError):
        _client(clock).call_tool(_endpoint(), "echo")
    assert server.methods == ["tools/call"]


def test_a_call_timeout_is_never_retried(mock, clock, no_verdict) -> None:
    """A network failure after the call was sent: no second attempt, no probe."""
    no_verdict.remember(KEY, "modern", MODERN, 600, clock.now_ns)
    mock.add(responses.POST, URL, body=requests.ReadTimeout())
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "timeout"
    assert len(mock.calls) == 1


def test_a_fresh_verdict_is_not_second_guessed(mock, clock) -> None:
    """A call refused with -32602 right after a probe said modern: that refusal is the answer
    (the tool's arguments), no second probe, no handshake."""
    server = _modern(clock)
    server.overrides["tools/call"] = _error(200, -32602, request_id=2)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "rpc_error" and caught.value.code == -32602
    assert server.methods == ["server/discover", "tools/call"]


def test_two_origins_keep_their_own_verdicts(mock, clock) -> None:
    """A modern and a handshake-era server used alternately: each keeps its own era."""
    other = "http://192.0.2.2/mcp"
    modern = _modern(clock)
    modern.install(mock)
    old = ScriptedServer(clock, session_id=None)
    old.install(mock, other)
    client = _client(clock)
    old_endpoint = Endpoint(identifier="old", url=other)
    for _ in range(2):
        client.call_tool(_endpoint(), "echo")
        client.call_tool(old_endpoint, "echo")
    assert modern.methods == ["server/discover", "tools/call", "tools/call"]
    assert old.methods == ["server/discover"] + ["initialize", "notifications/initialized", "tools/call"] * 2


def test_a_refusal_that_is_not_about_the_era_is_not_sent_again(mock, clock, no_verdict) -> None:
    """Remembered modern, the call refused with -32602 (its arguments), a new probe says modern
    again: the refusal stands and the call is not repeated."""
    no_verdict.remember(KEY, "modern", MODERN, 600, clock.now_ns)
    server = _modern(clock)
    server.overrides["tools/call"] = _error(400, -32602, request_id=1)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.code == -32602
    assert server.methods == ["tools/call", "server/discover"]


def test_a_probe_cut_off_after_acceptance_is_no_verdict(mock, clock, no_verdict) -> None:
    """server/discover answered 200 with an event stream that ends before the answer: the probe
    is 'interrupted', which says nothing about the era: no handshake follows, nothing is
    remembered, and the call is never sent."""
    stream = (
        "event: message\ndata: " + json.dumps({"jsonrpc": "2.0", "method": "notifications/message"}) + "\n\n"
    )
    server = ScriptedServer(
        clock, overrides={"server/discover": (200, {"Content-Type": "text/event-stream"}, stream)}
    )
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        _client(clock).call_tool(_endpoint(), "echo")
    assert caught.value.kind == "interrupted" and caught.value.accepted
    assert server.methods == ["server/discover"]
    assert no_verdict.get(KEY, clock.now_ns) is None
