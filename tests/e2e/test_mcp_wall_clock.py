"""Whatever a server does, an operation ends within its budget + 1 s (real time, 127.0.0.1).

The adversarial peer holds each leg far longer than the budget (its handlers give up
only after a minute), so an operation that ends in time was ended by the client.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nr_llm.mcp import Endpoint, McpClient, McpTransportError
from tests.peers import running

pytestmark = pytest.mark.e2e

BUDGET = 2


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        yield f"http://127.0.0.1:{port}"


def _timed(operation: Callable[[], Any]) -> tuple[float, McpTransportError]:
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        operation()
    return time.monotonic() - started, caught.value


def _endpoint(base_url: str, scenario: str, budget: float = BUDGET) -> Endpoint:
    return Endpoint(identifier="hostile", url=f"{base_url}/{scenario}/mcp", budget_seconds=budget)


CLIENT = McpClient(allow_private_networks=True)


def test_a_well_behaved_peer_answers(base_url: str) -> None:
    """Control: the same peer without a misbehaviour answers at once, so the failures below are its doing."""
    outcome = CLIENT.call_tool(_endpoint(base_url, "fine/0"), "echo", {"text": "x"})
    assert outcome.text == "done"


def test_slow_handshake_is_cut_at_the_budget(base_url: str) -> None:
    """initialize answering after 30 s: the operation times out within budget + 1 s."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "slow-init/30"), "echo"))
    assert error.kind == "timeout" and "'hostile'" in str(error)
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_slow_work_leg_is_cut_at_what_the_handshake_left(base_url: str) -> None:
    """tools/call answering after 30 s: timeout within budget + 1 s, not a fresh budget for the work."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "slow-work/30"), "echo"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_a_body_trickling_one_byte_every_fifth_of_a_second_cannot_outlive_the_leg(base_url: str) -> None:
    """Every socket wait is short, so requests' timeout never fires; the leg's grant still ends it."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "trickle/0.2"), "echo"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_headers_trickling_one_byte_every_fifth_of_a_second_cannot_outlive_the_leg(base_url: str) -> None:
    """A status line and headers dripped byte by byte end at the grant like a trickling body."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "slow-headers/0.2"), "echo"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_headers_followed_by_silence_end_at_the_budget(base_url: str) -> None:
    """Headers promising a body that never comes: timeout within budget + 1 s."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "silence/30"), "echo"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_an_event_stream_of_keepalives_ends_at_the_budget(base_url: str) -> None:
    """Keep-alive comments every 0.5 s (where the SDK client waits forever): timeout within budget + 1 s."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "keepalive/0.5"), "echo"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_a_fifty_page_walk_with_slow_pages_shares_one_budget(base_url: str) -> None:
    """50 pages of 0.4 s each (20 s in all) in a 3 s budget: refused within budget + 1 s, no partial list."""
    elapsed, error = _timed(lambda: CLIENT.list_tools(_endpoint(base_url, "slow-pages/0.4")))
    assert error.kind in ("deadline_exhausted", "timeout")
    assert elapsed < BUDGET + 1


def test_a_fifty_page_walk_completes_when_the_budget_allows(base_url: str) -> None:
    """The same slow walk with pages of 0.05 s fits a 10 s budget: all 50 tools, in order."""
    tools = CLIENT.list_tools(_endpoint(base_url, "slow-pages/0.05", budget=10))
    assert [tool["name"] for tool in tools] == [f"tool_{index}" for index in range(50)]


def test_an_endless_body_stops_at_the_two_mebibyte_cap(base_url: str) -> None:
    """A body that never ends is read only up to 2 MiB: too_large, long before the budget."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "endless/0", budget=20), "echo"))
    assert error.kind == "too_large" and "2 MiB" in str(error)
    assert elapsed < 10
