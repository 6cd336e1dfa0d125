"""The ledger's admin pages at any size: no whole-table count or DISTINCT, a windowed count, the
per-server summary's figures (bounded, exact when the sample holds the window)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from nr_llm.governance import paging, summary
from nr_llm.governance.summary import percentile, summarise
from nr_llm.models import McpServer, ToolCall, ToolCallStatus

from .helpers import FakeClock

pytestmark = pytest.mark.django_db

NOW = FakeClock().now
LIST = "admin:nr_llm_toolcall_changelist"
INBOX = "admin:nr_llm_toolcallapproval_changelist"


def _rows(count: int, *, server: str = "srv", minutes_apart: float = 1.0, newest: datetime = NOW) -> None:
    ToolCall.objects.bulk_create(
        ToolCall(
            id=uuid.uuid4(),
            created=newest - timedelta(minutes=n * minutes_apart),
            tool_name=f"mcp_{server}_echo",
            server_identifier=server,
            actor_label="agent",
            status=ToolCallStatus.SUCCEEDED,
        )
        for n in range(count)
    )


def _superuser() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


@pytest.mark.parametrize(
    ("view", "query"),
    [
        (LIST, ""),
        (LIST, "status__exact=failed"),
        (LIST, "server_identifier=srv"),
        (LIST, "server_identifier=srv&tool_name=mcp_srv_echo"),
        (LIST, "since=24h"),
        (LIST, "q=agent"),
        (LIST, "p=2"),
        (INBOX, ""),
        (INBOX, "status__exact=all"),
        ("admin:index", ""),
    ],
)
def test_no_ledger_page_counts_the_whole_table_or_reads_distinct_values(view, query):
    """Every COUNT over the ledger has a LIMIT inside it, and no query reads DISTINCT values or
    dates of the ledger (Django's AllValues filters and date hierarchy did both)."""
    _rows(120)
    client = _superuser()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse(view) + "?" + query).status_code == 200
    ledger_sql = [q["sql"] for q in queries.captured_queries if "nr_llm_toolcall" in q["sql"]]
    assert ledger_sql
    for sql in ledger_sql:
        assert "DISTINCT" not in sql.upper(), sql
        if re.search(r"COUNT\(", sql, re.IGNORECASE) and "GROUP BY" not in sql.upper():
            assert "LIMIT" in sql.upper(), sql


def test_a_long_list_says_more_than_and_offers_the_next_pages_only(monkeypatch):
    """Past the counted window the list says "more than N"; the next pages open; a page past
    the deepest offered is the admin's error redirect, not an OFFSET in the millions."""
    monkeypatch.setattr(paging, "PAGES_AHEAD", 1)
    _rows(120)
    client = _superuser()
    first = client.get(reverse(LIST)).content.decode()
    assert "more than 100 calls" in first
    third = client.get(reverse(LIST) + "?p=3").content.decode()
    assert "120 calls" in third  # the end is within the window: counted exactly
    monkeypatch.setattr(paging, "MAX_PAGES", 2)
    deep = client.get(reverse(LIST) + "?p=3")
    assert deep.status_code == 302 and deep["Location"].endswith("?e=1")


def test_percentiles_are_nearest_rank():
    """p50 and p95 of 1..100 are 50 and 95; of nothing, None."""
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.95), percentile([], 0.5)) == (50, 95, None)
    assert percentile([7], 0.95) == 7


def test_the_summary_is_exact_when_its_sample_holds_the_window():
    """Three calls today (one failed) and one three days ago: 24 h shows 3, 1 error, p50 20 ms,
    p95 30 ms; 7 days shows 4; a waiting call is counted; a server with nothing is left out."""
    for minutes, status, ms in [(10, "succeeded", 10), (20, "failed", 20), (30, "succeeded", 30)]:
        ToolCall.objects.create(
            created=NOW - timedelta(minutes=minutes), server_identifier="a", status=status, duration_ms=ms
        )
    ToolCall.objects.create(created=NOW - timedelta(days=3), server_identifier="a", status="succeeded")
    ToolCall.objects.create(
        created=NOW, server_identifier="a", status="awaiting_approval", expires_at=NOW + timedelta(hours=1)
    )
    [row] = summarise(NOW, ["a", "quiet"])
    day, week = row.windows
    assert (day.calls, day.estimated, day.errors, day.p50_ms, day.p95_ms) == (4, False, 1, 20, 30)
    assert (week.calls, row.waiting) == (5, 1)


def test_a_busy_server_is_estimated_from_its_newest_calls(monkeypatch):
    """With a sample of 4 and a call every hour, the 24 h count is extrapolated from the
    sample's rate (about 24 · 4 / 3), marked estimated, shown with "≈"."""
    monkeypatch.setattr(summary, "SAMPLE", 4)
    _rows(30, server="busy", minutes_apart=60, newest=NOW - timedelta(minutes=1))
    [row] = summarise(NOW, ["busy"])
    day = row.windows[0]
    assert day.estimated and day.sampled == 4 and 24 <= day.calls <= 32
    assert day.calls_text.startswith("≈")


def test_the_summary_heads_the_tool_calls_list_as_it_opens_only():
    """The unfiltered Tool calls list shows the per-server summary; a filtered one and the
    Approvals inbox do not (their rows are the point)."""
    _rows(3, server="", newest=timezone.now())  # local tools, in the last 7 days
    client = _superuser()
    assert 'id="tool-call-summary"' in client.get(reverse(LIST)).content.decode()
    assert 'id="tool-call-summary"' not in client.get(reverse(LIST) + "?since=1h").content.decode()
    assert 'id="tool-call-summary"' not in client.get(reverse(INBOX)).content.decode()


def test_other_lists_keep_djangos_counts():
    """The app's pagination and search templates change the ledger's lists only: a filtered MCP
    servers list still says "N results (M total)" and "N MCP servers"."""
    from tests.factories import McpServerFactory

    McpServerFactory.create(enabled=True)
    McpServerFactory.create(enabled=False)
    text = _superuser().get(reverse("admin:nr_llm_mcpserver_changelist") + "?enabled__exact=1").content
    assert "1 result (" in text.decode() and "2 total" in text.decode()


def test_the_summary_shows_the_busiest_servers_and_says_how_many_it_left_out(monkeypatch):
    """With room for two rows and three active servers, the two busiest are shown (however they
    sort by name), the idle one never counts, and the page names the one quieter server left out."""
    monkeypatch.setattr(summary, "SERVERS_SHOWN", 2)
    now = timezone.now()
    for name, count in [("a-quiet", 1), ("m-busy", 5), ("z-busiest", 9)]:
        McpServer.objects.create(
            identifier=name, url=f"https://{name}.example/mcp", data_class="publicContent"
        )
        _rows(count, server=name, newest=now)
    McpServer.objects.create(identifier="b-idle", url="https://idle.example/mcp", data_class="publicContent")
    assert [row.server for row in summarise(now, ["a-quiet", "b-idle", "m-busy", "z-busiest"])] == [
        "z-busiest",
        "m-busy",
        "a-quiet",
    ]
    page = _superuser().get(reverse(LIST)).content.decode()
    shown = page.split('id="tool-call-summary"', 1)[1]
    assert "z-busiest" in shown and "m-busy" in shown
    assert "a-quiet</th>" not in shown
    assert "1 quieter server with calls not shown" in shown
