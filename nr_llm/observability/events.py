"""``RequestEvent``: one structured row per completed request, sent through logging.

The event travels as ``record.nr_llm_event`` on logger ``nr_llm.requests``; every
logging handler is a sink, so filtering, capacity, ordering, flushing and closing are
logging's own.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import Any

REQUESTS_LOGGER = "nr_llm.requests"
EVENT_ATTRIBUTE = "nr_llm_event"
CANCELLED = "cancelled"

logger = logging.getLogger(REQUESTS_LOGGER)


@dataclasses.dataclass(frozen=True, slots=True)
class RequestEvent:
    """A completed request. ``outcome`` is set only on cancellation rows.

    ``ok`` stays the legacy success bit: a sink that opted into cancellations checks
    ``outcome`` before reading ``ok=False`` as an application failure.
    """

    request_id: str
    trace_id: str | None
    method: str
    route: str | None
    status_code: int
    ok: bool
    duration_ms: float
    started_at: datetime
    user_id: str | None = None
    outcome: str | None = None
    error_type: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The row a sink stores: ``outcome`` and ``error_type`` only when they apply."""
        row: dict[str, Any] = {
            "request_id": self.request_id,
            "trace_id": self.trace_id,
            "method": self.method,
            "route": self.route,
            "status_code": self.status_code,
            "ok": self.ok,
            "duration_ms": self.duration_ms,
            "started_at": self.started_at.isoformat(),
            "user_id": self.user_id,
        }
        if self.outcome is not None:
            row["outcome"] = self.outcome
        if self.error_type is not None:
            row["error_type"] = self.error_type
        return row


def has_receiver(target: logging.Logger, level: int) -> bool:
    """Whether a record at ``level`` that ``target`` lets through (the caller has tested
    ``isEnabledFor``) would reach any handler, lastResort included.

    Building a LogRecord nobody receives is a measurable share of a trivial request.
    """
    if target.hasHandlers():
        return True
    return logging.lastResort is not None and level >= logging.lastResort.level


def emit(event: RequestEvent) -> None:
    send(logger, logging.INFO, "request.completed", (), {EVENT_ATTRIBUTE: event})


def send(target: logging.Logger, level: int, msg: str, args: tuple[Any, ...], extra: dict[str, Any]) -> None:
    """``target.log()`` without the caller lookup: the source line of a completion record is
    always this module, and walking the stack for it is a measurable share of a request."""
    record = target.makeRecord(target.name, level, __file__, 0, msg, args, None, extra=extra)
    target.handle(record)
