"""A handshake-era server that answers 404 for a session it forgot (a restart, an expiry):
the client opens one new session and sends again only the request the 404 proves was not run
(tests/peers/changing_server.py counts what it ran). The accepted case, a 404 to the
resumption of a call the server took, is tests/e2e/test_mcp_exactly_once.py's."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
import requests

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol import resend
from nr_llm.mcp.protocol.eras import EraCache
from tests.peers import running


@pytest.fixture
def base() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server"]) as port:
        yield f"http://127.0.0.1:{port}"


def _client() -> McpClient:
    return McpClient(connection=ConnectionSettings(allow_private_networks=True), era_cache=EraCache())


def _seen(base: str) -> dict[str, object]:
    return requests.get(f"{base}/seen", timeout=5).json()  # type: ignore[no-any-return]


def test_a_call_refused_for_a_forgotten_session_runs_once_in_one_new_session(base: str) -> None:
    """404 to the tools/call (nothing ran): one new initialize, the call sent again, run once."""
    requests.post(f"{base}/expire-calls/1", timeout=5)
    outcome = _client().call_tool(Endpoint("changing", f"{base}/mcp", 10), "echo", {"text": "hi"})
    assert outcome.text == "hi"
    seen = _seen(base)
    assert seen["ran"] == 1
    assert seen["seen"]["initialize"] == 2  # type: ignore[index]
    assert seen["seen"]["tools/call"] == 2  # type: ignore[index]


def test_a_server_that_forgets_every_session_is_reopened_once_and_said_not_to_have_run(base: str) -> None:
    """404 again in the new session: ``session_expired`` after exactly one reopen; the server
    ran nothing, and the error says the call could not have run."""
    requests.post(f"{base}/expire-calls/5", timeout=5)
    with pytest.raises(McpTransportError) as caught:
        _client().call_tool(Endpoint("changing", f"{base}/mcp", 10), "echo", {"text": "hi"})
    assert caught.value.kind == "session_expired"
    assert not resend.may_have_run(caught.value)
    seen = _seen(base)
    assert seen["ran"] == 0
    assert seen["seen"]["initialize"] == 2  # type: ignore[index]
    assert seen["seen"]["tools/call"] == 2  # type: ignore[index]
