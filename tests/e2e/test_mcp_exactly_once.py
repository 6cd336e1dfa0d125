"""Exactly once: a tools/call the server accepted is never sent again (issue 18, finding 1).

On a real socket, over TLS by name (https://mcp.test, a certificate of this session's test
CA for that name only): tests/peers/adversarial.py's ``once/ERA/SHAPE`` scenarios note every
tools/call the server runs. Once a POST got a 2xx status line, whatever follows it (a stream
that ends early and a resumption answered 404 or 405, never answered or cut off, a body cut
off, a stream with no event id) ends the operation ``interrupted``, saying the tool may have
run, with no new session, no re-probe and no fallback, in both eras. A refusal that proves
nothing ran still falls back, and the tool runs once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.mcp import Endpoint, McpClient, McpTransportError
from tests.tls import TestAuthority, names_session, tls_adversary, tls_client

pytestmark = pytest.mark.e2e

BUDGET = 4


@pytest.fixture(scope="module")
def origin(tls: TestAuthority) -> Iterator[str]:
    with tls_adversary(tls.issue("mcp.test")) as (port, _log):
        yield f"https://mcp.test:{port}"


def _client(tls: TestAuthority, keepalive_seconds: float = 1.5) -> McpClient:
    return tls_client(tls, keepalive_seconds=keepalive_seconds)


def _seen(origin: str, tls: TestAuthority, path: str) -> list[dict[str, Any]]:
    with names_session(tls) as session:
        rows = session.get(f"{origin}/seen", timeout=10).json()
    return [row for row in rows if row.get("path") == path]


def _methods(rows: list[dict[str, Any]]) -> list[str]:
    return [row["method"] for row in rows]


def _call(
    tls: TestAuthority, origin: str, era: str, shape: str, tag: str, keepalive_seconds: float = 1.5
) -> tuple[Any, list[dict[str, Any]]]:
    """Learn the era with a ping (so a remembered era is what the call meets), then call once;
    the call's outcome or error and every request of this path the server saw."""
    path = f"/once/{era}/{shape}/{tag}/mcp"
    endpoint = Endpoint(identifier="once", url=f"{origin}{path}", budget_seconds=BUDGET)
    client = _client(tls, keepalive_seconds)
    assert client.ping(endpoint).era == era
    started = time.monotonic()
    try:
        result: Any = client.call_tool(endpoint, "echo", {"text": "x"})
    except McpTransportError as exc:
        result = exc
    assert time.monotonic() - started < BUDGET + 1
    return result, _seen(origin, tls, path)


@pytest.mark.parametrize(
    ("era", "shape", "cause"),
    [
        # The issue's two shapes: the handshake era reopened a session on the 404 and sent the
        # call again; the 2026 era took the 405 as the other era's refusal and, the re-probe
        # answered by an old backend, sent the call again through the handshake.
        ("handshake", "resume-404", "HTTP 404"),
        ("modern", "resume-405", "HTTP 405"),
        ("modern", "resume-404", "HTTP 404"),
        ("handshake", "resume-405", "HTTP 405"),
        ("handshake", "resume-stall", "no answer in time"),
        ("modern", "resume-stall", "no answer in time"),
        ("handshake", "resume-broken", "no connection"),
        ("modern", "resume-broken", "no connection"),
        ("handshake", "no-id", "no event id"),
        ("modern", "no-id", "no event id"),
        ("handshake", "broken-body", "the connection broke"),
        ("modern", "broken-body", "the connection broke"),
    ],
)
def test_an_accepted_call_that_cannot_be_finished_is_interrupted_and_never_sent_again(
    tls: TestAuthority, origin: str, era: str, shape: str, cause: str
) -> None:
    """The server ran the tool once; the client ends 'interrupted' (accepted), its message
    naming the server and the tool and saying the tool may have run, and sends no second
    tools/call, no initialize after the call, and no server/discover after the ping."""
    error, seen = _call(tls, origin, era, shape, "interrupted")
    assert isinstance(error, McpTransportError), error
    assert (error.kind, error.accepted, error.server) == ("interrupted", True, "once")
    message = str(error)
    assert "'once'" in message and "'echo'" in message and "may have run" in message and cause in message
    methods = _methods(seen)
    assert methods.count("ran") == 1, methods
    after_call = methods[methods.index("POST tools/call") :]
    assert after_call.count("POST tools/call") == 1, methods
    assert "POST initialize" not in after_call and "POST server/discover" not in after_call, methods


@pytest.mark.parametrize("keepalive_seconds", [1.5, 0], ids=["pooled", "fresh"])
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_call_whose_connection_closes_unanswered_is_not_sent_again(
    tls: TestAuthority, origin: str, era: str, keepalive_seconds: float
) -> None:
    """The server reads the call, runs it and closes the connection with no status line: not
    accepted (no status line came), yet the call was written and may have run, so it is
    'interrupted', saying so, and sent once, on a pooled connection (where a read would have been
    retried) as on a fresh one."""
    tag = f"unanswered-{keepalive_seconds}"
    error, seen = _call(tls, origin, era, "unanswered", tag, keepalive_seconds)
    assert isinstance(error, McpTransportError), error
    assert (error.kind, error.accepted) == ("interrupted", False)
    assert "'echo'" in str(error) and "may have run" in str(error) and "before any answer" in str(error)
    methods = _methods(seen)
    assert methods.count("ran") == 1 and methods.count("POST tools/call") == 1, methods


@pytest.mark.parametrize(
    ("era", "shape", "ran"),
    [
        # The issue's shape (issue 25, item 2): the tool runs (a progress notification says so)
        # and fails with -32602 on the POST's 200 stream; the re-probe, answered by an old
        # backend of a rolling deploy, used to send the call again through the handshake.
        ("modern", "progress-error", 1),
        ("handshake", "progress-error", 1),
        # A 200 status line took the call, whatever its error's code says: not sent again.
        ("modern", "refuse-32601", 0),
    ],
)
def test_an_error_after_a_2xx_status_line_is_accepted_and_never_sent_again(
    tls: TestAuthority, origin: str, era: str, shape: str, ran: int
) -> None:
    """A JSON-RPC error answering a tools/call after a 2xx status line is ``rpc_error`` with
    ``accepted`` set and its code kept; no re-probe, no other era, no second tools/call."""
    error, seen = _call(tls, origin, era, shape, "accepted-error")
    assert isinstance(error, McpTransportError), error
    assert (error.kind, error.accepted) == ("rpc_error", True)
    assert error.code == (-32602 if shape == "progress-error" else -32601)
    assert "may have run" in str(error)
    methods = _methods(seen)
    assert methods.count("ran") == ran, methods
    after_call = methods[methods.index("POST tools/call") :]
    assert after_call.count("POST tools/call") == 1, methods
    assert "POST initialize" not in after_call and "POST server/discover" not in after_call, methods


@pytest.mark.parametrize(
    "shape", ["refuse-32022", "refuse-400", "refuse-nocode", "refuse-nocode-404", "refuse-nocode-405"]
)
def test_a_refusal_that_proves_nothing_ran_falls_back_and_runs_once(
    tls: TestAuthority, origin: str, shape: str
) -> None:
    """A remembered 2026 era whose call is refused before running (400 with -32022, a bare 400;
    400, 404 or 405 with an error object whose code is absent or a string: as good as the bare
    status, issue 25, item 12), and a re-probe an old
    backend answers: the call goes once more through the handshake, and the tool runs exactly
    once."""
    outcome, seen = _call(tls, origin, "modern", shape, "fallback")
    assert not isinstance(outcome, McpTransportError), outcome
    assert outcome.text == "done"
    methods = _methods(seen)
    assert methods.count("refused") == 1 and methods.count("ran") == 1, methods
    assert methods.count("POST server/discover") == 2 and "POST initialize" in methods, methods
