"""Reading a server's notifications/progress (nr_llm/mcp/protocol/progress.py)."""

from __future__ import annotations

import pytest

from nr_llm.mcp.protocol import progress
from nr_llm.mcp.protocol.progress import Progress


def test_the_token_goes_in_meta_beside_what_is_there() -> None:
    """A caller's own _meta members are kept; the token is added."""
    params = progress.with_token({"name": "t", "_meta": {"traceparent": "x"}}, "tok")
    assert params == {"name": "t", "_meta": {"traceparent": "x", "progressToken": "tok"}}


def test_only_this_requests_progress_is_handed_over() -> None:
    """Another token, another method or a malformed notification is ignored, never an error."""
    seen: list[Progress] = []
    read = progress.reader("tok", seen.append)
    read({"method": "notifications/progress", "params": {"progressToken": "other", "progress": 1}})
    read({"method": "notifications/message", "params": {"progressToken": "tok", "progress": 1}})
    read({"method": "notifications/progress", "params": {"progressToken": "tok", "progress": "1"}})
    read({"method": "notifications/progress", "params": "nonsense"})
    read({"method": "notifications/progress", "params": {"progressToken": "tok", "progress": 2, "total": 5}})
    assert seen == [Progress(2.0, 5.0, "")]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"progress": 1.5, "total": 3, "message": "half"}, Progress(1.5, 3.0, "half")),
        ({"progress": 1, "total": float("nan")}, Progress(1.0, None, "")),
        ({"progress": True}, None),
        ({"progress": 1, "message": "a\x1bb" + "x" * 500}, Progress(1.0, None, "ab" + "x" * 197 + "…")),
    ],
)
def test_values_are_checked_and_the_message_clipped(params, expected) -> None:
    """Numbers must be finite numbers (not booleans); the message is cleaned and clipped."""
    assert progress.parsed({"progressToken": "t", **params}, "t") == expected


def test_a_failing_listener_cannot_stop_the_call(caplog) -> None:
    """What the listener raises is logged; the reader returns, so the call reads on."""

    def fail(_: Progress) -> None:
        raise RuntimeError("listener broke")

    progress.reader("tok", fail)(
        {"method": "notifications/progress", "params": {"progressToken": "tok", "progress": 1}}
    )
    assert [r.getMessage() for r in caplog.records] == ["a progress listener failed; the call goes on"]
