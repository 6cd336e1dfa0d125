"""The issue's site: two gunicorn workers and two ``db_worker`` processes on PostgreSQL, sharing
one Redis through ``NR_LLM_CACHE`` (tests/shared_cache_site.py): a server's era is probed once
across the four processes, counted by the server itself (tests/peers/changing_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

from nr_llm.models import McpServer
from nr_llm.tasks import import_server_catalogue
from tests.e2e.test_import_workers import _database_url, wait_for, workers
from tests.factories import McpServerFactory
from tests.peers import ROOT, running
from tests.servers.test_shared_caches import _free_port, _redis

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def postgres(settings):
    if connection.vendor != "postgresql":
        pytest.skip("processes share a database only on PostgreSQL: run with DATABASE_URL=postgres://…")
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}


def _gunicorn(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "project/gunicorn_conf.py",
        "-w",
        "2",
        "-b",
        f"127.0.0.1:{port}",
    ]
    command += ["project.wsgi:application"]
    with open(log, "wb") as out:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def test_the_era_is_probed_once_across_two_web_and_two_task_workers(postgres, tmp_path: Path) -> None:
    with (
        _redis(tmp_path) as redis_url,
        running([sys.executable, "-m", "tests.peers.changing_server"]) as peer,
    ):
        base = f"http://127.0.0.1:{peer}"
        McpServerFactory.create(identifier="changing", url=f"{base}/mcp")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "tests.shared_cache_site",
            "DATABASE_URL": _database_url(),
            "NR_LLM_TEST_REDIS": redis_url,
        }
        port = _free_port()
        web = _gunicorn(port, env, tmp_path / "gunicorn.log")
        try:
            pids: set[int] = set()
            deadline = time.monotonic() + 60
            while len(pids) < 2 and time.monotonic() < deadline:
                try:
                    answer = requests.get(f"http://127.0.0.1:{port}/ping/changing/", timeout=15).json()
                except requests.ConnectionError:
                    time.sleep(0.2)
                    continue
                assert answer["reachable"] and answer["era"] == "handshake"
                pids.add(answer["pid"])
            assert len(pids) == 2, (tmp_path / "gunicorn.log").read_text()
        finally:
            web.terminate()
            web.wait(timeout=20)
        with workers(2, tmp_path, "tests.shared_cache_site", NR_LLM_TEST_REDIS=redis_url) as processes:
            env_workers = {p.pid for p in processes.values()}
            assert len(env_workers) == 2
            from django_tasks_db.models import DBTaskResult

            server = McpServer.objects.get(identifier="changing")
            for _ in range(6):
                import_server_catalogue.enqueue(server.pk)
            wait_for(
                lambda: DBTaskResult.objects.filter(status="SUCCESSFUL").count() == 6,
                "six imports done",
                tmp_path,
            )
            ran_on = {r.worker_ids[0] for r in DBTaskResult.objects.all()}
        seen = requests.get(f"{base}/seen", timeout=5).json()["seen"]
        assert seen["server/discover"] == 1, (seen, ran_on)
        assert ran_on == {"worker-1", "worker-2"}
        assert seen["tools/list"] == 6
