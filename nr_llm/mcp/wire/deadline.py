"""One deadline per MCP operation, spent by its legs in order (seed 000, ADR-170).

The budget belongs to the operation, not to the transport or the client: both are long
lived, an operation is not. Time is read from a monotonic clock seam so that a stepped
wall clock can neither grant a leg time nobody authorised nor expire it early, and so
that tests drive the arithmetic with a fake clock instead of sleeping.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

from .errors import McpTransportError

# A leg is never granted less: `requests` would read 0 as "no timeout at all", the exact
# opposite of a deadline, and it would arrive exactly when the budget is tightest.
MINIMUM_LEG_SECONDS = 1

# Not a policy (there is no upper clamp on what an installation may choose): the largest
# wait handed to a socket or a thread must fit the platform's clock (about 9.2e9 s), or
# the operation would crash with OverflowError. A billion seconds is 31 years.
MAXIMUM_BUDGET_SECONDS = 1_000_000_000

_NS = 1_000_000_000


class Clock(Protocol):
    def monotonic_ns(self) -> int: ...


class MonotonicClock:
    """The production clock: ``time.monotonic_ns``."""

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()


def effective_budget(budget_seconds: float) -> float:
    """The budget an operation really gets: below the leg floor (or not a number) is raised
    to it; beyond what the platform can wait for, it is the longest wait there is."""
    if math.isnan(budget_seconds) or budget_seconds < MINIMUM_LEG_SECONDS:
        return float(MINIMUM_LEG_SECONDS)
    return float(min(budget_seconds, MAXIMUM_BUDGET_SECONDS))


class OperationDeadline:
    """What is left of one operation's budget; each leg asks it for a grant."""

    def __init__(self, budget_seconds: float, clock: Clock, server: str) -> None:
        self.budget_seconds = effective_budget(budget_seconds)
        self.server = server
        self._clock = clock
        self._started_ns: int | None = None
        self._budget_ns = math.ceil(self.budget_seconds * _NS)

    def remaining_ns(self) -> int:
        if self._started_ns is None:
            return self._budget_ns
        return self._budget_ns - (self._clock.monotonic_ns() - self._started_ns)

    def grant(self) -> int:
        """Whole seconds the next leg may take: what is left, rounded up, never below the floor.

        Raises ``deadline_exhausted`` when less than the floor is left, so the leg is
        never built, let alone sent.
        """
        return -(-self._left_for_a_leg() // _NS)

    def wait_seconds(self) -> float:
        """How long a wait that is no socket's (a host lookup) may take: exactly what is left,
        never rounded up; checked, and the clock started, as by ``grant``."""
        return self._left_for_a_leg() / _NS

    def _left_for_a_leg(self) -> int:
        """What is left (ns), starting the clock; ``deadline_exhausted`` below a leg's floor."""
        remaining = self.remaining_ns()
        if self._started_ns is None:
            # The clock starts when the first leg asks, so the first leg always gets the
            # whole budget: a budget raised to the floor can send at least that leg.
            self._started_ns = self._clock.monotonic_ns()
        if remaining < MINIMUM_LEG_SECONDS * _NS:
            left = max(remaining, 0) // (_NS // 10) / 10  # rounded down: never claim time that is not there
            raise McpTransportError(
                "deadline_exhausted",
                self.server,
                f"MCP server {self.server!r} was not asked: this operation's budget of "
                f"{self.budget_seconds:g} s is spent ({left:.1f} s left, a request "
                f"needs at least {MINIMUM_LEG_SECONDS} s). The budget is this installation's "
                "setting; raise it if the server is slow but legitimate.",
            )
        return remaining

    def of_its_own(self, budget_seconds: float) -> OperationDeadline:
        """A deadline on the same clock for work that must be allowed to finish after this
        operation has ended (a refresh, once sent: oauth/tokens.py), its clock not yet started."""
        return OperationDeadline(budget_seconds, self._clock, self.server)
