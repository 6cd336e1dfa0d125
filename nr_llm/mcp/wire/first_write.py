"""A condition every request of this context passes before its first byte is written.

A tool call's ledger row must be committed before anything of the call reaches its server. The
row's INSERT may be sent ahead and its answer read only here, at the last moment before the
request is written (``nr_llm.governance.ahead``), so the database works while the client builds
the request. The condition raises ``Withheld`` to stop the request (nothing of it written: its
row was not written, or its catalogue row changed); it is asked again before every request of
the context, so it must give the same verdict each time, cheaply after the first.

A context variable, not a parameter: the condition reaches the connection's write through the
client's layers without any of them carrying it, and each thread of a turn has its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class Withheld(Exception):
    """Raised by a condition to stop a request before its first byte: no request happened (its
    span is dropped unended, its duration not recorded: ``protocol.telemetry``)."""


_condition: ContextVar[Callable[[], None] | None] = ContextVar("nr_llm_first_write", default=None)


@contextmanager
def waiting_for(condition: Callable[[], None]) -> Iterator[None]:
    """Requests written in this block pass ``condition()`` first."""
    token = _condition.set(condition)
    try:
        yield
    finally:
        _condition.reset(token)


def passed() -> None:
    """Run the context's condition, if there is one (called where a request is written)."""
    condition = _condition.get()
    if condition is not None:
        condition()
