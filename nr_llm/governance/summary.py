"""The Tool calls page's summary: per server, the last 24 hours and 7 days at a glance.

Bounded whatever the ledger's size: per server and window, the newest ``SAMPLE`` calls are
read through the (server, created) index and give the error count and the latency
percentiles; the number of calls is counted to ``COUNT_CAP`` at most ("10,000+"). A busy
server's figures are therefore those of its latest calls, and the page says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count

from .models import ToolCall, ToolCallStatus

SAMPLE = 1000
COUNT_CAP = 10_000
SERVERS_SHOWN = 12
WINDOWS = (("24 h", timedelta(days=1)), ("7 days", timedelta(days=7)))


@dataclass(frozen=True)
class Window:
    label: str
    calls: int
    capped: bool
    sampled: int
    errors: int
    p50_ms: int | None
    p95_ms: int | None

    @property
    def calls_text(self) -> str:
        return f"{COUNT_CAP:,}+" if self.capped else f"{self.calls:,}"


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
    """The summary of each of ``servers`` ("" = local tools) with a call in the last 7 days."""
    waiting = dict(
        ToolCall.objects.filter(status=ToolCallStatus.AWAITING_APPROVAL, expires_at__gt=now)
        .order_by()
        .values_list("server_identifier")
        .annotate(n=Count("pk"))
        .values_list("server_identifier", "n")
    )
    out: list[ServerSummary] = []
    for server in servers[:SERVERS_SHOWN]:
        windows = tuple(_window(server, label, now - span) for label, span in WINDOWS)
        if windows[-1].calls or waiting.get(server):
            out.append(ServerSummary(server, windows, waiting.get(server, 0)))
    return out


def _window(server: str, label: str, since: datetime) -> Window:
    recent = ToolCall.objects.filter(server_identifier=server, created__gte=since)
    rows = list(recent.order_by("-created").values_list("status", "duration_ms")[:SAMPLE])
    calls, capped = len(rows), False
    if calls == SAMPLE:
        calls = recent.order_by()[: COUNT_CAP + 1].count()
        capped = calls > COUNT_CAP
    durations = sorted(ms for _, ms in rows if ms is not None)
    return Window(
        label=label,
        calls=calls,
        capped=capped,
        sampled=len(rows),
        errors=sum(1 for state, _ in rows if state == ToolCallStatus.FAILED),
        p50_ms=percentile(durations, 0.5),
        p95_ms=percentile(durations, 0.95),
    )
