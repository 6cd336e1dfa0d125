"""McpClient.call_tool's errors say what is true: "may have run" unless a refusal proves otherwise."""

from __future__ import annotations

import json

import pytest
import responses

from nr_llm.mcp import Endpoint, McpClient, McpTransportError

from .scripted import URL, FakeClock, ScriptedServer

JSON = {"Content-Type": "application/json"}


def _call(mock: responses.RequestsMock, clock: FakeClock, answer: tuple[int, dict[str, str], str]):
    server = ScriptedServer(clock, overrides={"tools/call": answer})
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(allow_private_networks=True, clock=clock).call_tool(
            Endpoint(identifier="demo", url=URL), "echo"
        )
    assert server.methods.count("tools/call") == 1
    return caught.value


def _rpc(code: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 2, "error": {"code": code, "message": "no"}})


@pytest.mark.parametrize(
    "answer",
    [(502, {}, ""), (504, {}, ""), (200, JSON, _rpc(-32603))],
    ids=["502", "504", "rpc-32603"],
)
def test_an_answer_that_proves_nothing_says_the_tool_may_have_run(mock, clock, answer) -> None:
    """A 502/504 or an error code that is no refusal: the error itself says the tool may have run
    and is not sent again, its kind and codes kept for the caller to branch on."""
    error = _call(mock, clock, answer)
    assert "The tool 'echo' may have run; the call is not sent again." in str(error)
    assert error.kind in ("status", "rpc_error") and not error.accepted


@pytest.mark.parametrize("answer", [(422, {}, ""), (200, JSON, _rpc(-32602))], ids=["422", "rpc-32602"])
def test_a_proven_refusal_says_nothing_of_having_run(mock, clock, answer) -> None:
    """A 4xx or a refused-before-running code proves the tool did not run: no "may have run"."""
    error = _call(mock, clock, answer)
    assert "may have run" not in str(error)
