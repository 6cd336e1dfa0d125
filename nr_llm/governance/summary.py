"""The Tool calls page's summary: per server, the last 24 hours and 7 days at a glance.

Bounded whatever the ledger's size: ONE query per server reads its newest ``SAMPLE`` calls of
the last 7 days through the (server, created) index, and both windows are figured from it.
When the sample holds every call of a window, its figures are exact; when it does not (a busy
server), the number of calls is estimated from the rate the sample shows ("≈") and the errors
and latency percentiles are those of the sampled, newest calls. The page says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count

from .models import ToolCall, ToolCallStatus

SAMPLE = 200
SERVERS_SHOWN = 12
WINDOWS = (("24 h", timedelta(days=1)), ("7 days", timedelta(days=7)))


@dataclass(frozen=True)
class Window:
    label: str
    calls: int
    estimated: bool
    sampled: int
    errors: int
    p50_ms: int | None
    p95_ms: int | None

    @property
    def calls_text(self) -> str:
        return f"≈{self.calls:,}" if self.estimated else f"{self.calls:,}"


@dataclass(frozen=True)
class ServerSummary:
    server: str  # "" for local tools
    windows: tuple[Window, ...]
    waiting: int


def percentile(sorted_values: Sequence[int], fraction: float) -> int | None:
    """Nearest-rank percentile of ascending ``sorted_values``; None when there are none."""
    if not sorted_values:
        return None
    rank = max(1, -(-len(sorted_values) * fraction // 1))  # ceil, at least the first
    return sorted_values[int(rank) - 1]


def summarise(now: datetime, servers: Sequence[str]) -> list[ServerSummary]:
    """The summary of each of ``servers`` ("" = local tools) with a call in the last 7 days,
    or one awaiting approval, busiest first (calls of the last 24 hours, then of 7 days).

    Every server is read (one bounded query each) before any is left out, so a page that shows
    only the first ``SERVERS_SHOWN`` shows the busiest, never the first by name."""
    waiting = dict(
        ToolCall.objects.filter(status=ToolCallStatus.AWAITING_APPROVAL, expires_at__gt=now)
        .order_by()
        .values_list("server_identifier")
        .annotate(n=Count("pk"))
        .values_list("server_identifier", "n")
    )
    longest = max(span for _, span in WINDOWS)
    out: list[ServerSummary] = []
    for server in servers:
        rows = list(
            ToolCall.objects.filter(server_identifier=server, created__gte=now - longest)
            .order_by("-created")
            .values_list("created", "status", "duration_ms")[:SAMPLE]
        )
        if rows or waiting.get(server):
            windows = tuple(_window(label, now, span, rows) for label, span in WINDOWS)
            out.append(ServerSummary(server, windows, waiting.get(server, 0)))
    out.sort(key=lambda row: (-row.windows[0].calls, -row.windows[-1].calls, -row.waiting, row.server))
    return out


def _window(
    label: str, now: datetime, span: timedelta, rows: list[tuple[datetime, str, int | None]]
) -> Window:
    since = now - span
    inside = [row for row in rows if row[0] >= since]
    calls, estimated = len(inside), False
    if len(rows) == SAMPLE and rows[-1][0] > since:
        # The sample ends inside the window: the rest of it is extrapolated at the sample's rate.
        covered = (now - rows[-1][0]).total_seconds()
        calls, estimated = round(SAMPLE * span.total_seconds() / max(covered, 1.0)), True
    durations = sorted(ms for _, _, ms in inside if ms is not None)
    return Window(
        label=label,
        calls=calls,
        estimated=estimated,
        sampled=len(inside),
        errors=sum(1 for _, state, _ in inside if state == ToolCallStatus.FAILED),
        p50_ms=percentile(durations, 0.5),
        p95_ms=percentile(durations, 0.95),
    )
