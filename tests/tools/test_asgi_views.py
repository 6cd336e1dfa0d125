"""Async views under uvicorn: concurrent requests' tool calls run side by side, and a client
that goes away leaves no row running and no call sent twice.

The site (tests/tools/asgi_site.py) runs in a uvicorn process of its own, on a SQLite file of
its own, against the official SDK server's ``slow`` tool.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.peers import running, sdk_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(the site's base URL, the SDK server's /mcp URL)."""
    database = Path(tmp_path_factory.mktemp("asgi-site")) / "site.sqlite3"
    with sdk_server("--stateless") as mcp_url:
        env = {
            "DJANGO_SETTINGS_MODULE": "tests.tools.asgi_settings",
            "DATABASE_URL": f"sqlite:///{database}",
            "NR_LLM_TEST_MCP_URL": mcp_url,
        }
        with running([sys.executable, "-m", "tests.tools.asgi_site"], env=env, startup_seconds=60) as port:
            yield f"http://127.0.0.1:{port}", mcp_url


def _log(mcp_url: str) -> list[dict[str, Any]]:
    return requests.get(mcp_url.replace("/mcp", "/requests"), timeout=10).json()  # type: ignore[no-any-return]


def _tools_calls(mcp_url: str) -> int:
    return [entry["method"] for entry in _log(mcp_url)].count("tools/call")


def _peak(mcp_url: str, since: int) -> int:
    """The most tools/call requests the server was answering at once after its ``since``-th
    request, by its own log (an end sorts before a start at the same instant)."""
    spans = [(e["started"], e["ended"]) for e in _log(mcp_url)[since:] if e["method"] == "tools/call"]
    assert spans and all(end is not None for _, end in spans)
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def test_concurrent_requests_run_their_calls_side_by_side(site):
    """Six requests at once, each awaiting a 1 s tool call: all succeed, and the MCP server was
    answering all six at once (one after another on one thread it would answer one), while the
    views ran on the site's one event loop."""
    base, mcp_url = site
    before = len(_log(mcp_url))
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda _: requests.get(f"{base}/call/", timeout=30).json(), range(6)))
    assert [a["status"] for a in answers] == ["succeeded"] * 6
    assert all(a["text"] == "slept 1 s" for a in answers)
    assert _peak(mcp_url, before) == 6
    assert len({a["view_thread"] for a in answers}) == 1  # the loop's thread: the calls ran elsewhere


def test_a_turn_in_an_async_view_runs_its_calls_together(site):
    """aexecute_many's three 1 s calls reach the server together."""
    base, mcp_url = site
    before = len(_log(mcp_url))
    answer = requests.get(f"{base}/turn/", timeout=30).json()
    assert answer["statuses"] == ["succeeded"] * 3
    assert _peak(mcp_url, before) == 3


def test_a_client_that_goes_away_leaves_no_row_running_and_no_call_resent(site):
    """The client gives up after 0.3 s of a 1.5 s call: the call ends on its thread, its row
    records the answer, and the server received the call once."""
    base, mcp_url = site
    before = _tools_calls(mcp_url)
    rows_before = len(requests.get(f"{base}/rows/", timeout=10).json()["statuses"])
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.get(f"{base}/call/", params={"seconds": "1.5"}, timeout=0.3)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        statuses = requests.get(f"{base}/rows/", timeout=10).json()["statuses"]
        if len(statuses) > rows_before and "running" not in statuses:
            break
        time.sleep(0.1)
    assert len(statuses) == rows_before + 1 and "running" not in statuses
    assert statuses.count("succeeded") == rows_before + 1
    # The server logs a request as it arrives, and a resend would come before the row's outcome.
    assert _tools_calls(mcp_url) == before + 1
