"""Leases across the issue's site (issue 45): two gunicorn workers and two ``db_worker``
processes on PostgreSQL sharing one Redis (tests/shared_cache_site.py), against the official SDK
server, whose own request log (``/requests``: each call's tool and when it arrived and was
answered) says which calls overlapped.

- A tool marked "run alone", called twice in each of two turns served at once by the two web
  workers, never runs beside itself; the same turns without the mark overlap (the control: the
  server can run them at once).
- Four queued calls of a server with "calls at once" 1, taken by the two task workers at once,
  never reach the server two at a time; without the cap they do. Each is sent once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from django.db import connection

from nr_llm import tools
from nr_llm.models import CallLease, McpTool, ToolCall, ToolCallStatus
from tests.e2e.test_import_workers import _database_url, wait_for, workers
from tests.e2e.test_shared_cache_site import _gunicorn
from tests.factories import McpServerFactory, McpToolFactory
from tests.governance.test_leases import _log, _peak
from tests.peers import sdk_server
from tests.servers.test_shared_caches import _free_port, _redis

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SITE = "tests.shared_cache_site"
#: Each call's time on the server: long enough that calls sent together surely overlap.
SLOW_SECONDS = 0.5
SLOW_SCHEMA = {"type": "object", "properties": {"seconds": {"type": "number"}}}


def _postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            "web and task worker processes share a database only on PostgreSQL here: run with "
            "DATABASE_URL=postgres://…"
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, django_db_setup: None) -> Iterator[dict[str, str]]:
    """Redis, the SDK peer and the gunicorn site (two sync workers) on the test database, for
    the module: the peer's URL, Redis's, the site's and the directory of the site's log."""
    _postgresql()
    logs = tmp_path_factory.mktemp("leases-site")
    with _redis(logs) as redis_url, sdk_server("--stateless") as url:
        port = _free_port()
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": SITE,
            "DATABASE_URL": _database_url(),
            "NR_LLM_TEST_REDIS": redis_url,
        }
        web = _gunicorn(port, env, logs / "gunicorn.log")
        try:
            yield {"peer": url, "redis": redis_url, "web": f"http://127.0.0.1:{port}", "logs": str(logs)}
        finally:
            web.terminate()
            web.wait(timeout=20)


@pytest.fixture
def postgres(settings: Any) -> None:
    _postgresql()
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True


def _slow_tool(url: str, *, cap: int | None = None, alone: bool = False) -> McpTool:
    server = McpServerFactory.create(
        identifier="peer", url=url, max_concurrent_calls=cap, operation_timeout=30
    )
    return McpToolFactory.create(
        server=server, remote_name="slow", enabled=True, input_schema=SLOW_SCHEMA, run_alone=alone
    )


def _both_web_workers_up(web: str, logs: Path) -> None:
    """Ask the site until both gunicorn workers have answered, so the two turns that follow
    each find a worker waiting (a sync worker serves one request at a time)."""
    pids: set[int] = set()
    deadline = time.monotonic() + 60
    while len(pids) < 2 and time.monotonic() < deadline:
        try:
            answer = requests.get(f"{web}/ping/peer/", timeout=15).json()
        except requests.ConnectionError:
            time.sleep(0.2)
            continue
        assert answer["reachable"], answer
        pids.add(answer["pid"])
    assert len(pids) == 2, (logs / "gunicorn.log").read_text()


@pytest.mark.parametrize("alone", [False, True], ids=["no rule", "run alone"])
def test_a_run_alone_tool_never_overlaps_itself_across_two_web_workers_turns(
    postgres: None, site: dict[str, str], alone: bool
) -> None:
    """Two requests at once, each served by its own gunicorn worker, each a turn of two calls
    of the slow tool: marked "run alone", the server never has two of them at once, by its own
    log; unmarked, it has (so the rule, not the setup, kept them apart)."""
    tool = _slow_tool(site["peer"], alone=alone)
    _both_web_workers_up(site["web"], Path(site["logs"]))
    since = len(_log(site["peer"]))

    def turn(first: float) -> dict[str, Any]:
        query = f"seconds={first}&seconds={first + 0.001}"
        answer = requests.get(f"{site['web']}/turn/{tool.tool_name}/?{query}", timeout=60)
        assert answer.status_code == 200, answer.text[:2000]
        return dict(answer.json())

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(turn, [SLOW_SECONDS, SLOW_SECONDS + 0.01]))
    assert len({answer["pid"] for answer in answers}) == 2, answers  # two processes, one each
    assert [status for answer in answers for status, _ in answer["results"]] == ["succeeded"] * 4, answers
    sent = sorted(row["arguments"]["seconds"] for row in _log(site["peer"])[since:] if row["name"] == "slow")
    assert sent == [0.5, 0.501, 0.51, 0.511]  # each call sent once
    peak = _peak(site["peer"], "slow", since)
    if alone:
        assert peak == 1
    else:
        assert peak >= 2
    assert CallLease.objects.count() == 0


def _most_at_once(spans: list[tuple[datetime, datetime]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    peak = running = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


@pytest.mark.parametrize("cap", [None, 1], ids=["no cap", "calls at once 1"])
def test_a_servers_cap_of_one_holds_across_two_task_workers(
    postgres: None, site: dict[str, str], tmp_path: Path, cap: int | None
) -> None:
    """Four calls queued at once, two task workers taking one each at the same moment: with
    "calls at once" 1 the server never has two at once, by its own log, though both workers
    held a task at once (one waited for the place); without the cap it has two. Every call
    succeeded and was sent once."""
    from django_tasks_db.models import DBTaskResult

    tool = _slow_tool(site["peer"], cap=cap)
    since = len(_log(site["peer"]))
    seconds = [round(SLOW_SECONDS + n / 1000, 3) for n in range(4)]
    queued = [tools.enqueue(tool.tool_name, {"seconds": s}) for s in seconds]
    assert {result.status for result in queued} == {"queued"}
    with workers(2, tmp_path, SITE, NR_LLM_TEST_REDIS=site["redis"]):
        wait_for(
            lambda: ToolCall.objects.filter(status=ToolCallStatus.SUCCEEDED).count() == 4,
            "four calls succeeded",
            tmp_path,
        )
    assert {tools.result(result.call_id).status for result in queued} == {"succeeded"}
    sent = sorted(row["arguments"]["seconds"] for row in _log(site["peer"])[since:] if row["name"] == "slow")
    assert sent == seconds  # each call sent once
    tasks = list(DBTaskResult.objects.all())
    assert len(tasks) == 4 and {task.status for task in tasks} == {"SUCCESSFUL"}
    assert {task.worker_ids[0] for task in tasks} == {"worker-1", "worker-2"}
    spans = [(task.started_at, task.finished_at) for task in tasks]
    assert all(start and end for start, end in spans)
    assert _most_at_once(spans) == 2  # both workers were in a call at once
    peak = _peak(site["peer"], "slow", since)
    assert peak == (1 if cap else 2), peak
    assert CallLease.objects.count() == 0
