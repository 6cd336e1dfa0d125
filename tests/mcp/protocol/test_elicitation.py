"""Elicitation: a server asks for input during a call, in both eras, against the official SDK
2.3 server (tests/peers/features_server.py, tool ``reserve``), and the Elicitor's own rules.

The server logs every request it gets, with the capabilities each declared: the proof that
nothing is declared (and no GET stream opened) unless a responder is given.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.elicitation import (
    ElicitationAnswer,
    ElicitationRequest,
    Elicitor,
    response_to,
    with_defaults,
)
from tests.peers import running

SCHEMA = {
    "type": "object",
    "properties": {
        "date": {"type": "string"},
        "guests": {"type": "integer", "default": 2},
        "confirm": {"type": "boolean", "default": True},
    },
    "required": ["date"],
}


@pytest.fixture(scope="module", params=["handshake", "modern"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Endpoint]]:
    args = ["--no-discover"] if request.param == "handshake" else ["--modern-only"]
    with running([sys.executable, "-m", "tests.peers.features_server", *args]) as port:
        yield (
            request.param,
            Endpoint(identifier="features", url=f"http://127.0.0.1:{port}/mcp", budget_seconds=20),
        )


def _log(endpoint: Endpoint) -> list[dict[str, Any]]:
    return requests.get(endpoint.url.replace("/mcp", "/requests"), timeout=10).json()  # type: ignore[no-any-return]


def _client() -> McpClient:
    return McpClient(connection=ConnectionSettings(allow_private_networks=True))


@pytest.mark.e2e
def test_an_accepted_form_gets_the_schemas_defaults(server: tuple[str, Endpoint]) -> None:
    """The site fills only the date; guests and confirm come from the schema (SEP-1034)."""
    _, endpoint = server
    asked: list[ElicitationRequest] = []

    def respond(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.accept({"date": "Friday"})

    outcome = _client().call_tool(endpoint, "reserve", responder=Elicitor(respond, "features"))
    assert outcome.text == "reserved Friday for 2 (confirm=True)"
    assert [(r.mode, r.message, r.server) for r in asked] == [
        ("form", "When would you like to come?", "features")
    ]
    assert asked[0].schema["properties"]["guests"]["default"] == 2


@pytest.mark.e2e
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_reach_the_server(server: tuple[str, Endpoint], action: str) -> None:
    _, endpoint = server
    answer = ElicitationAnswer(action)  # type: ignore[arg-type]
    outcome = _client().call_tool(endpoint, "reserve", responder=Elicitor(lambda request: answer))
    assert outcome.text == f"not reserved: {action}"


@pytest.mark.e2e
def test_without_a_responder_nothing_is_declared_and_the_call_needs_input(
    server: tuple[str, Endpoint],
) -> None:
    """No responder: no capability declared, no GET stream, and the server's refusal for want
    of the capability is ``input_required`` (the site's ``needs_input``)."""
    era, endpoint = server
    before = len(_log(endpoint))
    with pytest.raises(McpTransportError) as needed:
        _client().call_tool(endpoint, "reserve")
    assert needed.value.kind == "input_required"
    assert "needs input (elicitation) to run tool 'reserve'" in str(needed.value)
    seen = _log(endpoint)[before:]
    assert all(entry["http"] != "GET" for entry in seen)
    declared = [entry["capabilities"] for entry in seen if entry["method"] in ("initialize", "tools/call")]
    assert declared and all(not capabilities for capabilities in declared)


@pytest.mark.e2e
def test_with_a_responder_only_elicitation_is_declared(server: tuple[str, Endpoint]) -> None:
    era, endpoint = server
    before = len(_log(endpoint))
    _client().call_tool(endpoint, "reserve", responder=Elicitor(lambda request: ElicitationAnswer.decline()))
    seen = _log(endpoint)[before:]
    # The handshake era declares them in initialize; the 2026 era in every request's _meta.
    where = "initialize" if era == "handshake" else "tools/call"
    declared = [entry["capabilities"] for entry in seen if entry["method"] == where]
    assert declared and all(
        capabilities == {"elicitation": {"form": {}, "url": {}}} for capabilities in declared
    )


def test_defaults_fill_only_what_the_answer_left_out() -> None:
    assert with_defaults(SCHEMA, {"date": "Mon", "guests": 5}) == {
        "date": "Mon",
        "guests": 5,
        "confirm": True,
    }
    assert with_defaults({"properties": "broken"}, {"a": 1}) == {"a": 1}


def test_a_responder_that_fails_or_has_no_answer_cancels() -> None:
    """A raising callable is ``cancel``; None is ``cancel`` too, kept in ``unanswered`` (needs_input)."""

    def broken(request: ElicitationRequest) -> ElicitationAnswer:
        raise RuntimeError("the form broke")

    params = {"message": "When?", "requestedSchema": SCHEMA}
    assert Elicitor(broken).result_for(params) == {"action": "cancel"}
    waiting = Elicitor(lambda request: None)
    assert waiting.result_for(params) == {"action": "cancel"}
    assert [request.message for request in waiting.unanswered] == ["When?"]


def test_url_mode_hands_the_site_the_url_and_sends_no_content() -> None:
    seen: list[ElicitationRequest] = []

    def respond(request: ElicitationRequest) -> ElicitationAnswer:
        seen.append(request)
        return ElicitationAnswer.accept({"ignored": True})

    params = {"mode": "url", "message": "Connect", "url": "https://auth.example/x", "elicitationId": "e1"}
    assert Elicitor(respond).result_for(params) == {"action": "accept"}
    assert (seen[0].mode, seen[0].url, seen[0].elicitation_id) == ("url", "https://auth.example/x", "e1")


def test_an_undeclared_request_is_refused_with_a_json_rpc_error() -> None:
    """A server asking for what was never declared (no responder, or sampling) gets -32601."""
    asked = {"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": {"message": "x"}}
    assert response_to(asked, None)["error"]["code"] == -32601
    sampling = {"jsonrpc": "2.0", "id": 8, "method": "sampling/createMessage", "params": {}}
    assert response_to(sampling, Elicitor(lambda r: ElicitationAnswer.decline()))["error"]["code"] == -32601
    accepted = response_to(asked, Elicitor(lambda r: ElicitationAnswer.accept()))
    assert accepted == {"jsonrpc": "2.0", "id": 7, "result": {"action": "accept", "content": {}}}
