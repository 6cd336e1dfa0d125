"""One deadline per MCP operation, spent by its requests in order, on a monotonic clock so a
stepped wall clock neither grants nor takes time (and tests can use a fake clock)."""

from __future__ import annotations

import math
import time
from typing import Protocol

from .errors import McpTransportError

# Never less: `requests` reads a timeout of 0 as "no timeout at all".
MINIMUM_LEG_SECONDS = 1

# Not a policy: a longer wait would overflow the platform's clock (about 9.2e9 s).
MAXIMUM_BUDGET_SECONDS = 1_000_000_000

_NS = 1_000_000_000


class Clock(Protocol):
    def monotonic_ns(self) -> int: ...


class MonotonicClock:
    def monotonic_ns(self) -> int:
        return time.monotonic_ns()


def effective_budget(budget_seconds: float) -> float:
    """The budget clamped between one request's floor and the longest wait there is."""
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
        """Whole seconds the next request may take; ``deadline_exhausted`` before it is built."""
        return -(-self._left_for_a_leg() // _NS)

    def wait_seconds(self) -> float:
        """What is left, not rounded up, for a wait that is no socket's (a host lookup)."""
        return self._left_for_a_leg() / _NS

    def _left_for_a_leg(self) -> int:
        """What is left (ns), starting the clock; ``deadline_exhausted`` below a leg's floor."""
        remaining = self.remaining_ns()
        if self._started_ns is None:
            # Started by the first request, so a budget raised to the floor sends at least one.
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
        """A new deadline on the same clock, for work that must finish after this operation (a
        token refresh once sent)."""
        return OperationDeadline(budget_seconds, self._clock, self.server)
