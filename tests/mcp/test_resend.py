"""The one rule for sending a request again: only a refusal that proves it did not run."""

from __future__ import annotations

import pytest

from nr_llm.mcp import McpTransportError
from nr_llm.mcp.errors import ChallengeError
from nr_llm.mcp.resend import new_session, other_era, refused


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
