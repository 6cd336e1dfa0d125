"""The one rule for sending a request again: only a refusal that proves it did not run."""

from __future__ import annotations

import pytest

from nr_llm.mcp import McpTransportError
from nr_llm.mcp.protocol.resend import may_have_run, new_session, other_era, refused, repeatable
from nr_llm.mcp.wire.errors import ChallengeError
from nr_llm.mcp.wire.legs import on_fresh_connection
from nr_llm.mcp.wire.watchdog import Delivery


def _error(kind: str, *, status: int | None = None, code: int | None = None, accepted: bool = False):
    return McpTransportError(kind, "demo", "x", http_status=status, code=code, accepted=accepted)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        _error("rpc_error", status=200, code=-32601),
        _error("rpc_error", status=400, code=-32022),
        _error("rpc_error", code=-32602),
        _error("status", status=400),
        _error("status", status=405),
        _error("session_expired"),
        ChallengeError("demo", "x", status=401),
    ],
    ids=[
        "32601-on-200",
        "32022-on-400",
        "32602-in-body",
        "bare-400",
        "bare-405",
        "session-404",
        "challenge-401",
    ],
)
def test_a_refusal_before_running_may_be_sent_again(error: McpTransportError) -> None:
    """The server's own answer to the POST refused it: nothing ran."""
    assert refused(error)


@pytest.mark.parametrize(
    "error",
    [
        _error("interrupted", accepted=True),
        _error("status", status=405, accepted=True),
        _error("session_expired", accepted=True),
        _error("timeout", accepted=True),
        _error("timeout"),
        _error("unreachable"),
        _error("malformed"),
        _error("status", status=502),
        _error("rpc_error", code=-32603),
        _error("rpc_error", code=-32601, accepted=True),
    ],
    ids=[
        "interrupted",
        "405-after-acceptance",
        "404-after-acceptance",
        "timeout-after-acceptance",
        "timeout",
        "unreachable",
        "malformed",
        "bad-gateway",
        "internal-error",
        "32601-after-acceptance",
    ],
)
def test_anything_that_may_have_run_is_never_sent_again(error: McpTransportError) -> None:
    """Accepted, no answer, a 5xx or an error a server gives after running: not sent again, in
    no session and no era."""
    assert not refused(error) and not new_session(error) and not other_era(error)


def test_only_a_forgotten_session_opens_a_new_one_and_only_an_era_refusal_changes_era() -> None:
    """A 404 for our session is a new session, not another era; a 401 is neither."""
    assert new_session(_error("session_expired")) and not other_era(_error("session_expired"))
    assert other_era(_error("status", status=404)) and not new_session(_error("status", status=404))
    challenge = ChallengeError("demo", "x", status=401)
    assert not other_era(challenge) and not new_session(challenge)


@pytest.mark.parametrize(
    ("delivery", "may_repeat", "again"),
    [
        (Delivery(reused=True, written=True), True, True),  # a stale connection took a read
        (Delivery(reused=True, written=False), False, True),  # the write failed: it never left
        (Delivery(reused=True, written=True), False, False),  # a tools/call that left: interrupted
        (Delivery(reused=True, written=True, answered=True), True, False),  # an answer began
        (Delivery(reused=False, written=False), True, False),  # a new connection: the server is down
    ],
    ids=["stale-read", "unwritten-call", "written-call", "answer-began", "fresh"],
)
def test_a_pooled_connection_failure_goes_once_more_only_when_harmless(
    delivery: Delivery, may_repeat: bool, again: bool
) -> None:
    """on_fresh_connection: a connection from the pool that broke before any byte of an answer
    lets a repeatable request, or one that never left, go once more on a new connection."""
    assert on_fresh_connection(_error("unreachable"), delivery, may_repeat) is again


@pytest.mark.parametrize("kind", ["timeout", "tls", "too_large", "status"])
def test_only_a_broken_connection_is_sent_again_on_a_new_one(kind: str) -> None:
    """A timeout (the budget is spent), a TLS or cap failure or a status is no stale connection."""
    assert on_fresh_connection(_error(kind), Delivery(reused=True), True) is False


def test_an_accepted_failure_is_never_sent_again_on_a_new_connection() -> None:
    """A 2xx status line came: whatever the connection shows, the request may have run."""
    assert on_fresh_connection(_error("unreachable", accepted=True), Delivery(reused=True), True) is False


@pytest.mark.parametrize(
    ("http_method", "rpc_method", "expected"),
    [
        ("POST", "server/discover", True),
        ("POST", "initialize", True),
        ("POST", "tools/list", True),
        ("POST", "ping", True),
        ("DELETE", None, True),
        ("GET", None, True),
        ("POST", "tools/call", False),
        ("POST", "notifications/initialized", False),
        ("POST", None, False),  # an OAuth token or registration request
    ],
)
def test_what_may_be_repeated(http_method: str, rpc_method: str | None, expected: bool) -> None:
    """Reads and the end of a session may go twice; a tool call, a notification, a token request not."""
    assert repeatable(http_method, rpc_method) is expected


@pytest.mark.parametrize(
    "error",
    [
        _error("timeout"),
        _error("status", status=502),
        _error("status", status=504),
        _error("status", status=500),
        _error("rpc_error", status=200, code=-32603),
        _error("rpc_error", status=200, code=-32000),
        _error("interrupted"),
        _error("interrupted", accepted=True),
        _error("malformed", accepted=True),
        _error("rpc_error", code=-32601, accepted=True),
        _error("status", status=404, accepted=True),
        _error("redirect", status=303),
        _error("too_large"),
        _error("input_required"),
    ],
    ids=[
        "timeout-before-status-line",
        "502",
        "504",
        "500",
        "32603-internal-error",
        "32000-server-error",
        "interrupted-unanswered",
        "interrupted-accepted",
        "malformed-accepted",
        "32601-after-acceptance",
        "404-after-acceptance",
        "303-see-other",
        "too-large-headers",
        "input-required",
    ],
)
def test_a_written_request_no_answer_refused_may_have_run(error: McpTransportError) -> None:
    """What the model and the ledger are told: the request was written and nothing the server
    answered proves it refused before running, so the tool may have run."""
    assert may_have_run(error)


@pytest.mark.parametrize(
    "error",
    [
        _error("deadline_exhausted"),
        _error("refused_host"),
        _error("tls"),
        _error("unreachable"),
        _error("invalid_tool"),
        _error("missing_credential"),
        McpTransportError("timeout", "demo", "x", written=False),
        _error("rpc_error", status=200, code=-32601),
        _error("rpc_error", status=200, code=-32602),
        _error("status", status=422),
        _error("session_expired"),
        ChallengeError("demo", "x", status=401),
    ],
    ids=[
        "budget-spent",
        "refused-host",
        "tls",
        "unreachable",
        "invalid-tool",
        "missing-credential",
        "timeout-while-connecting",
        "32601",
        "32602",
        "422",
        "session-404",
        "challenge-401",
    ],
)
def test_a_request_never_sent_or_refused_before_running_could_not_run(error: McpTransportError) -> None:
    """'Could not run' only when nothing left this machine or the server's answer proves a refusal."""
    assert not may_have_run(error)


def test_the_verdict_agrees_with_the_resend_rule() -> None:
    """Whatever may be resent as a refusal is never said to have possibly run, and an accepted
    request is never said to have been refused."""
    for kind in ("rpc_error", "status", "session_expired", "timeout", "interrupted", "malformed"):
        for status in (None, 200, 400, 404, 502):
            for code in (None, -32601, -32603):
                for accepted in (False, True):
                    error = _error(kind, status=status, code=code, accepted=accepted)
                    assert not (refused(error) and may_have_run(error))
                    assert not accepted or may_have_run(error)


def test_what_the_verdict_reads_survives_pickling() -> None:
    """``written`` (with ``accepted``) crosses a task queue's process boundary unchanged."""
    import pickle

    error = pickle.loads(pickle.dumps(McpTransportError("timeout", "demo", "x", written=False)))
    assert (error.written, may_have_run(error)) == (False, False)
