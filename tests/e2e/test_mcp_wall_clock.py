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

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
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


CLIENT = McpClient(connection=ConnectionSettings(allow_private_networks=True))


def test_a_well_behaved_peer_answers(base_url: str) -> None:
    """Control: the same peer without a misbehaviour answers at once, so the failures below are its doing."""
    outcome = CLIENT.call_tool(_endpoint(base_url, "fine/0"), "echo", {"text": "x"})
    assert outcome.text == "done"


HOSTILE = {
    "slow-init/30": "initialize answers only after 30 s",
    "slow-work/30": "tools/call answers after 30 s (no fresh budget for the work)",
    "trickle/0.2": "the body trickles one byte every 0.2 s, so no socket wait ever times out",
    "slow-headers/0.2": "the status line and headers drip one byte every 0.2 s",
    "silence/30": "headers promise a body that never comes",
    "keepalive/0.5": "an event stream of keep-alive comments every 0.5 s (where the SDK waits forever)",
}


@pytest.mark.parametrize("scenario", list(HOSTILE), ids=list(HOSTILE.values()))
def test_a_hostile_leg_is_cut_within_budget_plus_one_second(base_url: str, scenario: str) -> None:
    """Whatever the leg does (see the ids), the operation ends with 'timeout' naming the
    server, no earlier than the budget and within budget + 1 s."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, scenario), "echo"))
    assert error.kind == "timeout" and "'hostile'" in str(error)
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_rounding_a_grant_up_does_not_carry_the_operation_past_its_budget(base_url: str) -> None:
    """A 0.9 s initialize in a 3 s budget leaves ~2.1 s, granted as 3 whole seconds to the
    socket waits; the stuck work leg is still cut when the budget is spent (~3 s), not when
    the rounded grant is (~3.9 s, a hair from budget + 1 s on a loaded machine)."""
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "late-stuck/0.9", budget=3), "echo"))
    assert error.kind == "timeout"
    assert 3 - 0.1 <= elapsed < 3 + 0.8  # the rounded grant would end at ~3.9 s


def test_an_astronomical_budget_is_waited_for_not_crashed_on(base_url: str) -> None:
    """A budget of 1e20 s (no upper clamp is configured) still runs a call: the socket
    timeouts and the watchdog get the longest wait the platform has, not an OverflowError."""
    assert CLIENT.call_tool(_endpoint(base_url, "fine/0", budget=1e20), "echo").text == "done"


def test_a_fifty_page_walk_with_slow_pages_shares_one_budget(base_url: str) -> None:
    """50 pages of 0.4 s each (20 s in all) in a 2 s budget: refused within budget + 1 s, no partial list."""
    elapsed, error = _timed(lambda: CLIENT.list_tools(_endpoint(base_url, "slow-pages/0.4")))
    assert error.kind in ("deadline_exhausted", "timeout")
    assert elapsed < BUDGET + 1


def test_a_fifty_page_walk_completes_when_the_budget_allows(base_url: str) -> None:
    """The same slow walk with pages of 0.05 s fits a 10 s budget: all 50 tools, in order."""
    tools = CLIENT.list_tools(_endpoint(base_url, "slow-pages/0.05", budget=10))
    assert [tool["name"] for tool in tools] == [f"tool_{index}" for index in range(50)]


def test_an_endless_body_stops_at_the_two_mebibyte_cap(base_url: str) -> None:
    """A body that never ends is read only up to 2 MiB: too_large, long before the budget."""
    _, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "endless/0", budget=20), "echo"))
    assert error.kind == "too_large" and "2 MiB" in str(error)  # not a timeout at the budget


def test_a_stream_closed_early_is_resumed_with_last_event_id(base_url: str) -> None:
    """The server closes its stream after a priming event (retry 0.2 s): the client waits the
    retry interval, GETs with Last-Event-ID and the negotiated revision, and reads the answer there."""
    import requests

    started = time.monotonic()
    outcome = CLIENT.call_tool(_endpoint(base_url, "drop/0.2", budget=5), "echo")
    assert outcome.text == "resumed"
    assert time.monotonic() - started >= 0.2
    gets = [row for row in requests.get(f"{base_url}/seen", timeout=10).json() if row["method"] == "GET"]
    assert gets[-1]["Last-Event-ID"] == "call-2" and gets[-1]["MCP-Protocol-Version"] == "2025-06-18"


def test_resumption_that_would_not_fit_the_budget_is_not_attempted(base_url: str) -> None:
    """A retry interval of 10 s in a 2 s budget: interrupted at once, no GET, no waiting it out."""
    import requests

    before = len(requests.get(f"{base_url}/seen", timeout=10).json())
    elapsed, error = _timed(lambda: CLIENT.call_tool(_endpoint(base_url, "drop/10"), "echo"))
    assert error.kind == "interrupted" and "would not fit" in str(error)
    assert elapsed < BUDGET - 0.5  # not the budget waited out
    assert len(requests.get(f"{base_url}/seen", timeout=10).json()) == before


def test_a_tls_handshake_trickling_byte_by_byte_is_cut_within_budget_plus_one_second() -> None:
    """An https server whose handshake record arrives one byte every 0.2 s: the handshake
    never completes and no socket wait times out, yet the operation ends within budget + 1 s."""
    with running([sys.executable, "-m", "tests.peers.adversarial", "--tls-trickle"]) as port:
        endpoint = Endpoint(identifier="hostile", url=f"https://127.0.0.1:{port}/mcp", budget_seconds=BUDGET)
        elapsed, error = _timed(lambda: CLIENT.call_tool(endpoint, "echo"))
    assert error.kind == "timeout" and "'hostile'" in str(error)
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1
