"""The 2026-07-28 legs under the one budget, in real time on 127.0.0.1: a slow or trickling
``server/discover`` and a slow modern call each end within budget + 1 s."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.eras import cache_key, process_cache
from tests.peers import running

pytestmark = pytest.mark.e2e

BUDGET = 2
CLIENT = McpClient(connection=ConnectionSettings(allow_private_networks=True))


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        yield f"http://127.0.0.1:{port}"


def _endpoint(base_url: str, scenario: str, budget: float = BUDGET) -> Endpoint:
    return Endpoint(identifier="hostile", url=f"{base_url}/{scenario}/mcp", budget_seconds=budget)


def _timed_failure(endpoint: Endpoint) -> tuple[float, McpTransportError]:
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        CLIENT.call_tool(endpoint, "echo")
    return time.monotonic() - started, caught.value


@pytest.mark.parametrize(
    "scenario",
    ["slow-discover/30", "trickle-discover/0.2"],
    ids=["discover answers after 30 s", "discover body trickles a byte every 0.2 s"],
)
def test_a_stuck_probe_is_cut_within_budget_plus_one_second_and_not_remembered(base_url, scenario) -> None:
    """The probe is a leg of the call's budget: timeout no earlier than the budget and within
    budget + 1 s; a timeout is no era verdict, so nothing is remembered for the origin."""
    endpoint = _endpoint(base_url, scenario)
    elapsed, error = _timed_failure(endpoint)
    assert error.kind == "timeout" and "'hostile'" in str(error)
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1
    assert process_cache().get(cache_key(endpoint.url), time.monotonic_ns()) is None


def test_a_slow_modern_call_is_cut_within_budget_plus_one_second(base_url) -> None:
    """A 2026 server that discovers at once and sits on tools/call: timeout within budget + 1 s."""
    elapsed, error = _timed_failure(_endpoint(base_url, "modern-slow-work/30"))
    assert error.kind == "timeout"
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_the_call_gets_only_what_the_probe_left(base_url) -> None:
    """A 1.3 s discover in a 2 s budget leaves under the 1 s floor: the call is not sent
    (deadline_exhausted), and the whole operation still ends within budget + 1 s."""
    elapsed, error = _timed_failure(_endpoint(base_url, "slow-discover/1.3"))
    assert error.kind == "deadline_exhausted"
    assert 1.3 <= elapsed < BUDGET + 1


def test_a_modern_call_after_a_quick_probe_answers(base_url) -> None:
    """Control: with short waits the same peer answers in the modern era: the failures above are its doing."""
    assert CLIENT.call_tool(_endpoint(base_url, "modern-slow-work/0.1"), "echo").text == "done"
    assert CLIENT.ping(_endpoint(base_url, "slow-discover/0")).era == "modern"
