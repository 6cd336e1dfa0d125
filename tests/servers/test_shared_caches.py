"""Era verdicts and ``tools/list`` answers shared between processes through Django's cache
framework (``NR_LLM_CACHE``): Redis and the database cache, four processes each, a real server
counting what it was asked (tests/peers/changing_server.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.peers import ROOT, running

PROCESSES = 4


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _redis(tmp_path: Path) -> Iterator[str]:
    """A redis-server of the test's own: a free port, a temporary directory, no persistence."""
    port = _free_port()
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextlib.contextmanager
def _changing(*args: str) -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server", *args]) as port:
        yield f"http://127.0.0.1:{port}"


def _seen(base: str) -> dict[str, Any]:
    return requests.get(f"{base}/seen", timeout=5).json()  # type: ignore[no-any-return]


def _child(
    url: str,
    action: str,
    caches: dict[str, Any],
    databases: dict[str, Any] | None = None,
    alias: str = "shared",
) -> dict[str, Any]:
    env = {
        **os.environ,
        "CHILD_CACHES": json.dumps(caches),
        "CHILD_DATABASES": json.dumps(databases or {}),
        "CHILD_ALIAS": alias,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "-m", "tests.servers.shared_cache_child", url, action],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _redis_caches(location: str) -> dict[str, Any]:
    return {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "shared": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": location},
    }


def _database_caches(tmp_path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The database cache on a database the four processes share: the test database when the
    suite runs on PostgreSQL, else a SQLite file of the test's own."""
    from django.db import connection

    if connection.vendor == "postgresql":
        # The test database itself (its cache table goes with it), never the site's.
        db = connection.settings_dict
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db["NAME"],
            "USER": db["USER"] or "",
            "PASSWORD": db["PASSWORD"] or "",
            "HOST": db["HOST"] or "",
            "PORT": str(db["PORT"] or 5432),
        }
    else:
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "cache.sqlite3")}
    databases = {"default": database}
    caches = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "shared": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "nr_llm_shared_cache",
        },
    }
    return caches, databases


def _create_cache_table(caches: dict[str, Any], databases: dict[str, Any]) -> None:
    env = {**os.environ, "CHILD_CACHES": json.dumps(caches), "CHILD_DATABASES": json.dumps(databases)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    script = (
        "import json, os, django; from django.conf import settings; "
        "settings.configure(CACHES=json.loads(os.environ['CHILD_CACHES']), "
        "DATABASES=json.loads(os.environ['CHILD_DATABASES'])); django.setup(); "
        "from django.core.management import call_command; call_command('createcachetable')"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)


def test_the_era_is_probed_once_across_four_processes_sharing_redis(tmp_path: Path) -> None:
    """Four processes, one Redis: the first probes ``server/discover``, the other three read
    its verdict; the server's own log counts the probes."""
    with _redis(tmp_path) as location, _changing() as base:
        for _ in range(PROCESSES):
            assert _child(f"{base}/mcp", "ping", _redis_caches(location)) == {
                "reachable": True,
                "era": "handshake",
            }
        assert _seen(base)["seen"]["server/discover"] == 1
        assert _seen(base)["seen"]["initialize"] == PROCESSES


@pytest.mark.django_db(transaction=True)
def test_the_era_is_probed_once_across_four_processes_sharing_the_database_cache(tmp_path: Path) -> None:
    """The same with Django's database cache (``createcachetable`` first; on PostgreSQL when
    the suite runs there, else on a SQLite file)."""
    caches, databases = _database_caches(tmp_path)
    _create_cache_table(caches, databases)
    with _changing() as base:
        for _ in range(PROCESSES):
            assert _child(f"{base}/mcp", "ping", caches, databases)["era"] == "handshake"
        assert _seen(base)["seen"]["server/discover"] == 1


def test_each_process_probes_for_itself_without_a_shared_cache(tmp_path: Path) -> None:
    """The control: no ``NR_LLM_CACHE``, each process learns the era on its own."""
    with _changing() as base:
        for _ in range(PROCESSES):
            _child(
                f"{base}/mcp",
                "ping",
                {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
                alias="",
            )
        assert _seen(base)["seen"]["server/discover"] == PROCESSES


def test_a_public_tools_list_with_a_ttl_is_fetched_once_across_four_processes(tmp_path: Path) -> None:
    """``ttlMs`` 60 s and ``cacheScope`` public: one ``tools/list`` for four processes that
    accept a cached answer, and one era probe."""
    with _redis(tmp_path) as location, _changing("--ttl-ms", "60000", "--scope", "public") as base:
        for _ in range(PROCESSES):
            assert _child(f"{base}/mcp", "list", _redis_caches(location)) == {"tools": ["echo"]}
        seen = _seen(base)["seen"]
        assert seen["tools/list"] == 1 and seen["server/discover"] == 1


def test_a_tools_list_without_a_ttl_is_never_shared(tmp_path: Path) -> None:
    """No ``ttlMs``: the answer is stale at once, every process asks."""
    with _redis(tmp_path) as location, _changing() as base:
        for _ in range(PROCESSES):
            _child(f"{base}/mcp", "list", _redis_caches(location))
        assert _seen(base)["seen"]["tools/list"] == PROCESSES


def test_a_redis_that_is_down_costs_probes_not_answers(tmp_path: Path) -> None:
    """The cache's server is gone: every process still answers, each probing for itself."""
    caches = _redis_caches(f"redis://127.0.0.1:{_free_port()}/0")
    with _changing() as base:
        for _ in range(2):
            assert _child(f"{base}/mcp", "ping", caches)["reachable"] is True
        assert _seen(base)["seen"]["server/discover"] == 2


@pytest.mark.django_db
def test_an_unknown_cache_alias_fails_the_system_check(settings: Any) -> None:
    """``NR_LLM_CACHE`` naming no alias of ``CACHES`` is nr_llm.E045."""
    from nr_llm.checks import check_cache

    settings.NR_LLM_CACHE = "nowhere"
    assert [error.id for error in check_cache()] == ["nr_llm.E045"]
    settings.NR_LLM_CACHE = "default"
    assert check_cache() == []


@pytest.mark.django_db(transaction=True)
def test_a_missing_cache_table_leaves_the_callers_transaction_usable(settings: Any) -> None:
    """The database cache without ``createcachetable``: inside a caller's transaction the failed
    read is a miss, and the caller's next statement still runs (PostgreSQL would otherwise
    refuse every statement until the rollback)."""
    from django.db import transaction

    from nr_llm.models import McpServer
    from nr_llm.servers.caches import forget_shared_caches, shared_caches

    settings.CACHES = {
        **settings.CACHES,
        "missing": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "no_such_table"},
    }
    settings.NR_LLM_CACHE = "missing"
    forget_shared_caches()
    try:
        shared = shared_caches()
        assert shared is not None
        era_cache = shared[0]
        with transaction.atomic():
            assert era_cache.get(era_cache.key_for("https://mcp.example/mcp"), 0) is None
            assert McpServer.objects.count() == 0
    finally:
        forget_shared_caches()
