"""OperationDeadline: grants rounded up, floored at one second, refusal below the floor."""

from __future__ import annotations

import pytest

from nr_llm.mcp import McpTransportError
from nr_llm.mcp.wire.deadline import (
    MAXIMUM_BUDGET_SECONDS,
    MINIMUM_LEG_SECONDS,
    MonotonicClock,
    OperationDeadline,
)

from ..scripted import FakeClock


def test_first_grant_is_the_whole_budget() -> None:
    """A fresh deadline grants its full budget to the first leg."""
    deadline = OperationDeadline(20, FakeClock(), "demo")
    assert deadline.grant() == 20


def test_remaining_time_is_rounded_up() -> None:
    """4.8 s spent of 20 leaves 15.2 s, granted as 16 whole seconds."""
    clock = FakeClock()
    deadline = OperationDeadline(20, clock, "demo")
    deadline.grant()
    clock.advance(4.8)
    assert deadline.grant() == 16


def test_exactly_the_floor_is_still_granted() -> None:
    """With exactly one second left the leg is sent with a one-second grant."""
    clock = FakeClock()
    deadline = OperationDeadline(5, clock, "demo")
    deadline.grant()
    clock.advance(4)
    assert deadline.grant() == MINIMUM_LEG_SECONDS == 1


def test_below_the_floor_the_leg_is_refused_with_an_operator_message() -> None:
    """Under one second left raises deadline_exhausted naming budget, server, 'not asked' and the setting."""
    clock = FakeClock()
    deadline = OperationDeadline(20, clock, "demo")
    deadline.grant()
    clock.advance(19.2)
    with pytest.raises(McpTransportError) as caught:
        deadline.grant()
    error = caught.value
    assert error.kind == "deadline_exhausted"
    assert error.server == "demo"
    message = str(error)
    assert "'demo'" in message and "20 s" in message
    assert "not asked" in message and "(0.8 s left" in message
    assert "installation's setting" in message and "raise it" in message


def test_the_clock_starts_when_the_first_leg_asks() -> None:
    """Time before the first grant is not spent: the first leg always gets the whole budget."""
    clock = FakeClock()
    deadline = OperationDeadline(1, clock, "demo")
    clock.advance(0.5)
    assert deadline.grant() == 1
    clock.advance(0.5)
    with pytest.raises(McpTransportError, match="not asked"):
        deadline.grant()


def test_a_budget_below_the_floor_is_raised_to_it() -> None:
    """A 0.2 s (or zero, or negative) budget becomes one second, never an unbounded leg."""
    for budget in (0.2, 0, -5, float("nan")):
        deadline = OperationDeadline(budget, FakeClock(), "demo")
        assert deadline.budget_seconds == 1
        assert deadline.grant() == 1


def test_a_budget_beyond_what_the_platform_can_wait_is_the_longest_wait_there_is() -> None:
    """1e10 s, 1e300 s or infinity (a socket or thread wait that long raises OverflowError)
    becomes a billion seconds, granted whole to the first leg: no crash, and no policy
    clamp anywhere near a budget an operator would mean."""
    for budget in (1e10, 1e300, float("inf")):
        deadline = OperationDeadline(budget, FakeClock(), "demo")
        assert deadline.budget_seconds == MAXIMUM_BUDGET_SECONDS == 1_000_000_000
        assert deadline.grant() == MAXIMUM_BUDGET_SECONDS
    assert OperationDeadline(1e8, FakeClock(), "demo").grant() == 100_000_000


def test_spent_budget_never_yields_zero_or_negative_grants() -> None:
    """Far past the budget, grant() still raises instead of returning 0 or less."""
    clock = FakeClock()
    deadline = OperationDeadline(3, clock, "demo")
    deadline.grant()
    clock.advance(100)
    with pytest.raises(McpTransportError, match="was not asked"):
        deadline.grant()


def test_monotonic_clock_reads_nanoseconds_forward() -> None:
    """The production clock is monotonic nanoseconds and never runs backwards."""
    clock = MonotonicClock()
    first = clock.monotonic_ns()
    assert isinstance(first, int)
    assert clock.monotonic_ns() >= first


class TickingClock(FakeClock):
    """A clock that moves a microsecond on every reading, as a real one does."""

    def monotonic_ns(self) -> int:
        self.now_ns += 1_000
        return self.now_ns


def test_a_one_second_budget_sends_its_first_leg_on_a_moving_clock() -> None:
    """Readings taken while the first grant is computed do not eat into the floor: it is granted."""
    deadline = OperationDeadline(1, TickingClock(), "demo")
    assert deadline.grant() == 1
    with pytest.raises(McpTransportError, match="not asked"):
        deadline.grant()


def test_a_wait_gets_exactly_what_is_left_never_rounded_up() -> None:
    """wait_seconds: the exact remainder (a host lookup's wait), after grant checked a leg fits."""
    clock = FakeClock()
    deadline = OperationDeadline(5, clock, "demo")
    assert deadline.wait_seconds() == 5.0
    clock.advance(3.75)
    assert deadline.wait_seconds() == 1.25
    clock.advance(0.5)
    with pytest.raises(McpTransportError) as spent:
        deadline.wait_seconds()
    assert spent.value.kind == "deadline_exhausted"
