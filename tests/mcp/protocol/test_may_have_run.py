"""McpClient.call_tool's errors say what is true: "may have run" unless a refusal proves otherwise."""

from __future__ import annotations

import json
import sys

import pytest
import responses

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.resend import may_have_run
from tests.peers import running
from tests.tls import TestAuthority, tls_client

from ..scripted import URL, FakeClock, ScriptedServer

JSON = {"Content-Type": "application/json"}


def _call(mock: responses.RequestsMock, clock: FakeClock, answer: tuple[int, dict[str, str], str]):
    server = ScriptedServer(clock, overrides={"tools/call": answer})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL), "echo"
        )
    assert server.methods.count("tools/call") == 1
    return caught.value


def _rpc(code: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": code, "message": "no"}})


@pytest.mark.parametrize(
    "answer",
    [(502, {}, ""), (504, {}, ""), (200, JSON, _rpc(-32603)), (200, JSON, _rpc(-32602))],
    ids=["502", "504", "rpc-32603", "rpc-32602-on-200"],
)
def test_an_answer_that_proves_nothing_says_the_tool_may_have_run(mock, clock, answer) -> None:
    """A 502/504, or any JSON-RPC error on a 2xx answer (the server took the call, whatever the
    code): the error itself says the tool may have run and is not sent again, its kind and codes
    kept for the caller to branch on; only the 2xx answer is accepted."""
    error = _call(mock, clock, answer)
    assert "may have run; the call is not sent again." in str(error)
    assert error.kind in ("status", "rpc_error") and error.accepted == (answer[0] == 200)


@pytest.mark.parametrize("answer", [(422, {}, "")], ids=["422"])
def test_a_proven_refusal_says_nothing_of_having_run(mock, clock, answer) -> None:
    """A 4xx status line proves the tool did not run: no "may have run"."""
    error = _call(mock, clock, answer)
    assert "may have run" not in str(error)


@pytest.mark.e2e
def test_a_call_whose_tls_handshake_never_finished_could_not_run(tls: TestAuthority) -> None:
    """A server that goes silent after the ClientHello times the leg out before any request was
    written: the timeout proves nothing reached the server, so it is not 'may have run'."""
    with running([sys.executable, "-m", "tests.peers.adversarial", "--tls-stall"]) as port:
        endpoint = Endpoint(identifier="stalled", url=f"https://mcp.test:{port}/mcp", budget_seconds=2)
        with pytest.raises(McpTransportError) as caught:
            tls_client(tls).call_tool(endpoint, "echo")
    error = caught.value
    assert error.kind == "timeout" and not error.written
    assert not may_have_run(error) and "may have run" not in str(error)


def test_a_call_whose_handshake_failed_was_never_sent(mock, clock) -> None:
    """initialize answered 502: the operation failed before the call was sent, so whatever the
    failure, it could not run (and the server saw no tools/call)."""
    server = ScriptedServer(clock, overrides={"initialize": (502, {}, "")})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL), "echo"
        )
    assert caught.value.kind == "status" and not may_have_run(caught.value)
    assert "may have run" not in str(caught.value) and "tools/call" not in server.methods
