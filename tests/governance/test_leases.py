"""Leases: "calls at once" and "run alone" across turns, processes and hosts (governance/leases.py).

The rules are tested on every database with a clock the test moves; the promise across
processes against the official SDK server, whose own request log says which calls overlapped
(two processes of their own on the test database: PostgreSQL or MariaDB, which they can share).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
import requests
from django.db import connection, transaction
from django.db.models import DateTimeField, ExpressionWrapper
from django.db.models.functions import Now

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.governance import leases
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.models import CallLease, McpServer, McpTool, ToolCall, ToolCallStatus
from tests.factories import McpServerFactory, McpToolFactory
from tests.peers import ROOT, sdk_server

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    """``time.monotonic`` and ``time.sleep`` for ``leases.take``: a sleep moves the clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _take(server: McpServer, clock: Clock | None = None, **rules: Any) -> leases.Lease:
    clock = clock or Clock()
    options: dict[str, Any] = {"cap": None, "alone": False, "writes_alone": False, "budget": 5.0, **rules}
    return leases.take(server.pk, "mcp_s_t", clock=clock, sleep=clock.sleep, **options)


def test_a_server_without_caps_or_run_alone_takes_no_lease() -> None:
    """No rule to keep, nothing written: an ordinary call costs no query here."""
    server = McpServerFactory.create(identifier="free")
    lease = _take(server)
    assert (lease.pk, lease.refusal, lease.budget) == (None, "", 5.0)
    assert CallLease.objects.count() == 0


def test_calls_at_once_counts_the_leases_and_a_full_server_refuses_within_the_budget() -> None:
    """Cap 2: two leases granted; a third waits its 5 s budget in short, growing pauses and is
    refused, never past the budget; a place given back is granted at once."""
    server = McpServerFactory.create(identifier="capped")
    first, second = _take(server, cap=2), _take(server, cap=2)
    assert first.pk and second.pk and CallLease.objects.count() == 2
    clock = Clock()
    third = _take(server, clock, cap=2)
    assert third.pk is None and "no place was free within its 5 s budget" in third.refusal
    assert '"calls at once" 2' in third.refusal and "it was not sent" in third.refusal
    assert clock.now <= 5.0 - leases.MINIMUM_SECONDS and len(clock.slept) > 5
    assert clock.slept[0] <= leases.FIRST_PAUSE_SECONDS and max(clock.slept) <= leases.LAST_PAUSE_SECONDS
    first.release()
    first.release()  # once only
    assert _take(server, cap=2).pk is not None
    assert CallLease.objects.count() == 2


def test_run_alone_needs_the_server_to_itself_and_keeps_it() -> None:
    """An alone lease is refused beside any lease of its server; granted, it refuses every other
    (another server's leases are not in the way)."""
    server = McpServerFactory.create(identifier="alone")
    other = McpServerFactory.create(identifier="other")
    _take(other, cap=1)
    plain = _take(server, writes_alone=True)
    assert plain.pk is not None
    assert "no other call of its server runs" in _take(server, alone=True).refusal
    plain.release()
    alone = _take(server, alone=True)
    assert alone.pk is not None
    assert _take(server, writes_alone=True).refusal
    assert _take(server, alone=True).refusal
    assert _take(server, cap=5).refusal
    alone.release()
    assert _take(server, cap=5).pk is not None


def test_a_lease_past_its_time_on_the_database_clock_frees_its_place() -> None:
    """A lease whose holder died (expired by the database's clock) is deleted by the next taker."""
    server = McpServerFactory.create(identifier="expired")
    past = ExpressionWrapper(Now() - timedelta(seconds=1), output_field=DateTimeField())
    CallLease.objects.create(server=server, tool_name="dead", expires_at=past, holder="gone")
    lease = _take(server, cap=1)
    assert lease.pk is not None
    assert list(CallLease.objects.values_list("tool_name", flat=True)) == ["mcp_s_t"]


class Client:
    """``call_tool`` that records the leases it sees while it runs."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[int] = []

    def call_tool(self, endpoint: Endpoint, name: str, arguments: Any = None, **options: Any) -> CallOutcome:
        self.seen.append(CallLease.objects.count())
        if self.fail:
            raise RuntimeError("the client broke")
        return CallOutcome(text="done", is_error=False, era="modern")


def _capped_tool(**server: Any) -> McpTool:
    row = McpServerFactory.create(identifier="site", max_concurrent_calls=1, operation_timeout=2, **server)
    schema = {"type": "object"}
    return McpToolFactory.create(server=row, remote_name="t", enabled=True, input_schema=schema)


@pytest.mark.parametrize("fail", [False, True])
def test_execute_holds_a_lease_while_it_sends_and_gives_it_back(fail: bool) -> None:
    """The lease exists while the client runs, and is gone after, whether the call answered or
    the client broke."""
    tool = _capped_tool()
    client = Client(fail=fail)
    result = tools.execute(tool.tool_name, {}, client=client)
    assert client.seen == [1]
    assert result.is_error is fail
    assert CallLease.objects.count() == 0


def test_execute_on_a_full_server_could_not_run_and_was_not_sent() -> None:
    """Another process holds the server's one place for longer than the call's 2 s budget: the
    call waits within it, is never sent, and says "could not run" (its row too)."""
    tool = _capped_tool()
    later = ExpressionWrapper(Now() + timedelta(seconds=60), output_field=DateTimeField())
    CallLease.objects.create(server=tool.server, tool_name="busy", expires_at=later, holder="elsewhere")
    client = Client()
    started = time.monotonic()
    result = tools.execute(tool.tool_name, {}, client=client)
    assert time.monotonic() - started >= 2.0 - leases.MINIMUM_SECONDS
    assert client.seen == []
    assert result.is_error and "could not run 't'" in result.text and "it was not sent" in result.text
    row = ToolCall.objects.get(pk=str(result.call_id))
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, "no_place")
    assert CallLease.objects.count() == 1


def test_a_callers_transaction_holding_the_servers_row_never_hangs_the_call() -> None:
    """PostgreSQL: the caller's open transaction locked the server's row (it saved the server);
    the lease is written beside it and never waits for that lock, so the call ends within its
    budget, not sent, instead of each waiting for the other for good."""
    if connection.vendor == "sqlite":
        pytest.skip("SQLite writes nothing beside a caller's transaction (no row, no lease)")
    tool = _capped_tool()
    client = Client()
    with transaction.atomic():
        McpServer.objects.select_for_update().get(pk=tool.server.pk)
        result = tools.execute(tool.tool_name, {}, client=client)
    assert client.seen == []
    assert result.is_error and "could not run" in result.text and "it was not sent" in result.text
    # The places were never counted: the refusal names the lock, not a full server.
    assert "another open transaction held the server's row" in result.text
    assert "places" in result.text and "were taken" not in result.text


# -- across processes, against the SDK server ------------------------------------------------


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def shared(url: str, settings: Any) -> McpServer:
    """The demo server imported and enabled, on a database other processes can reach."""
    if connection.vendor == "sqlite":
        pytest.skip("processes need a database server they can share: run with DATABASE_URL=postgres://…")
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


def _environment() -> dict[str, str]:
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    scheme, port = ("mysql", 3306) if connection.vendor == "mysql" else ("postgres", 5432)
    database = f"{scheme}://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or port}/{db['NAME']}"
    return {**os.environ, "DATABASE_URL": database, "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true"}


def _process(*arguments: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "tests.governance.lease_process", *arguments]
    return subprocess.Popen(
        command, cwd=ROOT, env=_environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def _log(url: str) -> list[dict[str, Any]]:
    return requests.get(url.replace("/mcp", "/requests"), timeout=10).json()  # type: ignore[no-any-return]


def _peak(url: str, tool: str, since: int) -> int:
    """The most calls of ``tool`` the server was answering at once after its ``since``-th
    request, by its own log."""
    log = _log(url)[since:]
    spans = [
        (row["started"], row["ended"]) for row in log if row["method"] == "tools/call" and row["name"] == tool
    ]
    assert spans and all(end is not None for _, end in spans)
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    peak = running = 0
    for _, step in edges:  # an end sorts before a start at the same instant: touching is not overlapping
        running += step
        peak = max(peak, running)
    return peak


def _two_turns(calls: list[list[Any]]) -> list[list[list[str]]]:
    processes = [_process("turn", json.dumps(calls)) for _ in range(2)]
    for process in processes:
        assert process.stdout is not None and process.stdout.readline().strip() == "READY"
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("GO\n")
        process.stdin.flush()
    outputs = []
    for process in processes:
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 0
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    return outputs


@pytest.mark.e2e
@pytest.mark.parametrize("rule", ["none", "cap 1", "run alone"])
def test_two_processes_turns_keep_the_servers_caps(shared: McpServer, url: str, rule: str) -> None:
    """Two processes each run a turn of two 1 s calls of one tool at the same moment. With no
    rule the server answers all four at once (the control: the server can overlap them); with
    "calls at once" 1, or the tool marked "run alone", it never has two at once, by its log."""
    if rule == "cap 1":
        McpServer.objects.filter(pk=shared.pk).update(max_concurrent_calls=1)
    if rule == "run alone":
        McpTool.objects.filter(server=shared, remote_name="slow").update(run_alone=True)
    McpServer.objects.filter(pk=shared.pk).update(operation_timeout=30)
    since = len(_log(url))
    outputs = _two_turns([["mcp_demo_slow", {"seconds": 1}], ["mcp_demo_slow", {"seconds": 1}]])
    assert [status for output in outputs for status, _ in output] == ["succeeded"] * 4
    assert _peak(url, "slow", since) == (4 if rule == "none" else 1)
    assert CallLease.objects.count() == 0


@pytest.mark.e2e
def test_a_killed_holders_lease_expires(shared: McpServer) -> None:
    """A process dies (SIGKILL) holding the server's one place with a 3 s budget: its lease
    stays until its time passes on the database's clock, then the next taker gets the place."""
    with _process("hold", str(shared.pk), "3") as holder:  # its pipes closed after
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "HELD"
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait(30)
    [dead] = CallLease.objects.all()
    assert dead.holder.split(":")[1] == str(holder.pid)
    assert _take(shared, cap=1, budget=0.5).refusal  # still held: no process gave it back
    lease = leases.take(shared.pk, "next", cap=1, alone=False, writes_alone=False, budget=30)
    assert lease.pk is not None
    assert list(CallLease.objects.values_list("tool_name", flat=True)) == ["next"]
