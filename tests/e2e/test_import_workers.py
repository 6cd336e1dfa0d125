"""Admin imports on a real worker backend: django-tasks-db and two ``db_worker`` processes.

The admin action runs in this process against the test database; the workers are
``manage.py db_worker`` processes (settings: tests/worker_settings.py) on the same
PostgreSQL database, the MCP peer is the official SDK server on 127.0.0.1. SQLite's test
database lives in this process's memory, where no worker process can reach it.
"""

from __future__ import annotations

import html
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
from django.db import connection, connections
from django.urls import reverse

from nr_llm.models import ImportStatus, ImportTaskState, McpServer, McpTool
from tests.admin_clients import messages_of, post_action
from tests.factories import McpServerFactory, McpToolFactory
from tests.peers import ROOT, sdk_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")
QUEUED = re.compile(r"Import of (\w+) queued as task [0-9a-f-]{36}; the counts appear here once it has run\.")
WAIT_SECONDS = 60.0


@pytest.fixture
def db_tasks(settings):
    """The admin enqueues into the database; the peers listen on 127.0.0.1."""
    if connection.vendor == "sqlite":
        pytest.skip(
            "worker processes need a database server they can share: run with DATABASE_URL=postgres://… "
            "or mysql://… (the PostgreSQL and MariaDB jobs of .ci/run do)"
        )
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True


def _database_url() -> str:
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    scheme, port = ("mysql", 3306) if connection.vendor == "mysql" else ("postgres", 5432)
    return f"{scheme}://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or port}/{db['NAME']}"


@contextmanager
def workers(
    count: int, logs: Path, settings_module: str = "tests.worker_settings", **environment: str
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """``count`` db_worker processes on the test database, by worker id; all stopped afterwards."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings_module,
        "DATABASE_URL": _database_url(),
        "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true",
        # Last: a caller's DATABASE_URL wins (a SQLite file the test shares with its workers).
        **environment,
    }
    processes: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for number in range(1, count + 1):
            worker_id = f"worker-{number}"
            command = [sys.executable, "manage.py", "db_worker", "--worker-id", worker_id]
            command += ["--interval", "0.1", "--no-startup-delay", "--no-reload"]
            with open(logs / f"{worker_id}.log", "wb") as log:
                processes[worker_id] = subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
        yield processes
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_for(condition: Callable[[], Any], what: str, logs: Path) -> Any:
    """Poll ``condition`` until it is truthy; fail naming ``what`` (and the workers' logs) after a bound."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    worker_logs = "\n".join(f"--- {p.name}\n{p.read_text()}" for p in sorted(logs.glob("*.log")))
    raise AssertionError(f"not within {WAIT_SECONDS:g} s: {what}\n{worker_logs}")


class Gate:
    """The SDK peer's ``--gate`` controls: hold every catalogue listing until released."""

    def __init__(self, mcp_url: str) -> None:
        self.base = mcp_url.removesuffix("/mcp")

    def state(self) -> dict[str, int]:
        return dict(requests.get(f"{self.base}/gate", timeout=5).json())

    def release(self) -> None:
        requests.post(f"{self.base}/gate/release", timeout=5).raise_for_status()


def changelist_imports(client) -> dict[str, str]:
    """Each server's import as the changelist shows it: queued, running, stalled or "result: <status>"."""
    page = client.get(CHANGELIST).content.decode().replace("<wbr>", "")
    shown = {}
    for row in re.findall(r"<tr>.*?</tr>", page, flags=re.DOTALL):
        identifier = re.search(
            r'field-server_column.*?<div class="nr-llm-detail">(\w+)</div>', row, re.DOTALL
        )
        cell = re.search(r'<td class="field-catalogue_column">(.*?)</td>', row, re.DOTALL)
        if not (identifier and cell):
            continue
        text = html.unescape(re.sub(r"<[^>]+>", "\n", cell.group(1)))
        if match := re.search(r"^Import (queued|running|stalled)", text, re.MULTILINE):
            shown[identifier.group(1)] = match.group(1)
        else:
            status = re.search(r"^(Never imported|OK|Partial|Error)\b", text, re.MULTILINE)
            shown[identifier.group(1)] = "result: " + (status.group(1) if status else repr(text))
    return shown


def _catalogue(server: McpServer) -> list[tuple[Any, ...]]:
    fields = ["tool_name", "remote_name", "description", "enabled", "orphaned", "orphaned_at", "updated"]
    return list(McpTool.objects.filter(server=server).order_by("tool_name").values_list(*fields))


def _task_results():
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.all()


def test_five_imports_are_queued_and_each_runs_once_on_two_workers(admin_client, db_tasks, tmp_path):
    """Five servers imported at once: five queued tasks, each listed once by the peer and run by
    one of two workers, and every server seen in the changelist as queued, running, then OK."""
    with sdk_server("--stateless", "--gate") as mcp_url:
        gate = Gate(mcp_url)
        servers = [
            McpServerFactory.create(
                identifier=f"s{n}", name=f"Server {n}", url=mcp_url, enabled=True, operation_timeout=120
            )
            for n in range(1, 6)
        ]
        identifiers = sorted(server.identifier for server in servers)

        response = post_action(admin_client, CHANGELIST, "import_catalogue_action", servers)

        messages = messages_of(response)
        assert [level for level, _ in messages] == ["info"] * 5
        assert sorted(QUEUED.fullmatch(text).group(1) for _, text in messages) == identifiers  # type: ignore[union-attr]
        assert [r.status for r in _task_results()] == ["READY"] * 5
        seen: dict[str, list[str]] = {identifier: [] for identifier in identifiers}

        def look() -> None:
            for identifier, state in changelist_imports(admin_client).items():
                if not seen[identifier] or seen[identifier][-1] != state:
                    seen[identifier].append(state)

        look()
        # The changelist read the rows only: no server was asked anything.
        assert gate.state()["requests"] == 0

        with workers(2, tmp_path):
            for released in range(5):
                running = min(2, 5 - released)

                def settled(released: int = released, running: int = running) -> bool:
                    gate_state = gate.state()
                    states = list(McpServer.objects.values_list("import_task_state", "import_status"))
                    done = states.count((ImportTaskState.IDLE, ImportStatus.OK))
                    return (gate_state["waiting"], gate_state["served"], done) == (
                        running,
                        released,
                        released,
                    ) and ([state for state, _ in states].count(ImportTaskState.RUNNING) == running)

                wait_for(settled, f"{released} imports done and {running} held at the gate", tmp_path)
                look()
                gate.release()
            # Done as the changelist shows it: the result written and the task's state cleared
            # (a worker writes the one after the other).
            wait_for(
                lambda: (
                    McpServer.objects.filter(
                        import_status=ImportStatus.OK, import_task_state=ImportTaskState.IDLE
                    ).count()
                    == 5
                ),
                "all five imports done",
                tmp_path,
            )
            look()

        assert seen == {identifier: ["queued", "running", "result: OK"] for identifier in identifiers}
        # Five catalogue listings in all, one per server: no task ran twice.
        assert gate.state()["served"] == 5
        results = list(_task_results())
        assert [r.status for r in results] == ["SUCCESSFUL"] * 5
        assert all(len(r.worker_ids) == 1 for r in results)
        assert {r.worker_ids[0] for r in results} == {"worker-1", "worker-2"}
        assert sorted(r.return_value["identifier"] for r in results) == identifiers
        for server in servers:
            assert McpTool.objects.filter(server=server).count() == 5


def _blocked_tool_update() -> bool:
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            # Another session of this database still in the tool update (waiting for its row).
            cursor.execute(
                "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE()"
                " AND ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE 'UPDATE `nr_llm_mcptool`%%'"
            )
            return bool(cursor.fetchone()[0])
        cursor.execute(
            # This test database only: other suites may share the PostgreSQL server.
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND query LIKE 'UPDATE \"nr_llm_mcptool\"%%'"
        )
        return bool(cursor.fetchone()[0])


def _server_row_free(server: McpServer) -> bool:
    """Whether the killed worker's transaction is gone (it held the server row locked)."""
    from django.db import OperationalError, transaction

    try:
        with transaction.atomic():
            McpServer.objects.select_for_update(nowait=True).filter(pk=server.pk).exists()
    except OperationalError:
        return False
    return True


def test_a_worker_killed_mid_import_changes_nothing_and_the_import_runs_again(
    admin_client, db_tasks, tmp_path
):
    """SIGKILL to the worker while its import is writing (held on a row lock inside the
    reconcile): the catalogue is exactly as before; the import, run again, succeeds."""
    with sdk_server("--stateless") as mcp_url:
        server = McpServerFactory.create(identifier="victim", url=mcp_url, enabled=True)
        McpToolFactory.create(
            server=server, tool_name="mcp_victim_echo", remote_name="echo", description="old", enabled=True
        )
        gone = McpToolFactory.create(server=server, tool_name="mcp_victim_gone", remote_name="gone")
        before = _catalogue(server)
        status_before = McpServer.objects.values_list("import_status", "import_error", "last_imported").get()

        # Another session locks the row the import will mark orphaned: the import's
        # transaction, new tools already inserted, waits there for the kill.
        # A session of Django's own, beside the test's (either driver: psycopg 3 or psycopg2).
        blocker = connections.create_connection(connection.alias)
        blocker.set_autocommit(False)
        try:
            with blocker.cursor() as cursor:
                cursor.execute("SELECT 1 FROM nr_llm_mcptool WHERE id = %s FOR UPDATE", [gone.pk])
            with workers(2, tmp_path) as processes:
                [(_, text)] = messages_of(
                    post_action(admin_client, CHANGELIST, "import_catalogue_action", [server])
                )
                assert QUEUED.fullmatch(text)
                wait_for(_blocked_tool_update, "the import waiting on the locked tool row", tmp_path)
                [killed_task] = _task_results()
                [worker_id] = killed_task.worker_ids
                processes[worker_id].send_signal(signal.SIGKILL)
                processes[worker_id].wait(timeout=10)
                blocker.rollback()

                wait_for(lambda: _server_row_free(server), "the killed worker's transaction to end", tmp_path)
                assert _catalogue(server) == before
                assert McpTool.objects.filter(server=server).count() == 2
                assert (
                    McpServer.objects.values_list("import_status", "import_error", "last_imported").get()
                    == status_before
                )
                # Nobody can tell a dead worker from a slow one yet: it reads as running,
                # until its budget has run out (tests/catalogue/test_import_state.py).
                assert changelist_imports(admin_client) == {"victim": "running"}

                [(_, text)] = messages_of(
                    post_action(admin_client, CHANGELIST, "import_catalogue_action", [server])
                )
                assert QUEUED.fullmatch(text)
                wait_for(
                    lambda: changelist_imports(admin_client) == {"victim": "result: OK"},
                    "the import run again by the surviving worker",
                    tmp_path,
                )
        finally:
            blocker.close()

    # The backend cannot tell either: the killed task's result stays "running" for good.
    killed_task.refresh_from_db()
    assert killed_task.status == "RUNNING"
    rerun = _task_results().exclude(pk=killed_task.pk).get()
    assert rerun.status == "SUCCESSFUL"
    assert rerun.worker_ids != [worker_id]
    tools = dict(McpTool.objects.filter(server=server).values_list("tool_name", "orphaned"))
    assert tools == {
        "mcp_victim_add": False,
        "mcp_victim_echo": False,
        "mcp_victim_fail": False,
        "mcp_victim_gone": True,
        "mcp_victim_pixel": False,
        "mcp_victim_slow": False,
    }
    assert McpTool.objects.get(tool_name="mcp_victim_echo").description == "Return the text unchanged."
