"""A database crash right after a call ran leaves the call's row, with its outcome.

A throwaway PostgreSQL cluster (tests/e2e/throwaway_postgres.py) serves a site process
(tests/e2e/crash_site.py) that runs one call against the official SDK server; the moment the
call's answer is back, every process of the cluster is killed with SIGKILL. Started again,
crash recovery replays only what reached the disk, and the ledger must hold the call's row.

A commit that does not wait for the disk (``synchronous_commit`` off) is flushed later by the
WAL writer, within ``3 x wal_writer_delay``. A crash inside that window loses it, and an honest
test must make the window certain instead of lucky: the WAL writer is stopped (SIGSTOP) for
the call and ``wal_writer_delay`` is its maximum, so only a commit that flushed its own WAL
survives. Nothing else writes on the cluster meanwhile (no checkpoint, no background writer),
so nothing flushes the call's WAL for it.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection

from tests.peers import ROOT, sdk_server

from .throwaway_postgres import binaries, throwaway_cluster

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.database,  # its own cluster, driven through the run's driver
    # The PostgreSQL jobs run it on their own driver (psycopg 3, psycopg2); SQLite and MariaDB
    # have no cluster to crash here.
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="crashes a PostgreSQL cluster: run in the PostgreSQL jobs"
    ),
    pytest.mark.skipif(binaries() is None, reason="no PostgreSQL binaries under /usr/lib/postgresql"),
]

#: The cluster's settings: the WAL writer as slow as it goes, no checkpoint and no background
#: writer during the test; durability itself (fsync, synchronous_commit) left at its defaults.
SETTINGS = (
    "wal_writer_delay=10000",
    "wal_writer_flush_after=0",
    "checkpoint_timeout=86400",
    "max_wal_size=10GB",
    "bgwriter_lru_maxpages=0",
)


def _line(process: subprocess.Popen[str], seconds: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    if not ready:
        raise AssertionError(f"the site process said nothing in {seconds:g} s")
    line = process.stdout.readline()
    if not line:
        raise AssertionError(f"the site process ended (exit {process.wait(timeout=10)})")
    return line.strip()


def test_a_call_that_ran_keeps_its_row_through_a_database_crash():
    """The call answered; the cluster is killed (-9) at once; after crash recovery the ledger
    row of the call is there, succeeded and finished."""
    with sdk_server("--stateless") as mcp_url, throwaway_cluster(SETTINGS) as cluster:
        cluster.psql("postgres", "CREATE DATABASE site")
        env = {
            **os.environ,
            "DATABASE_URL": cluster.url("site"),
            "NR_LLM_CRASH_MCP_URL": mcp_url,
            "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true",
            "DJANGO_SETTINGS_MODULE": "tests.settings",
        }
        with subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.crash_site"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        ) as site:
            try:
                assert _line(site, 120) == "READY"
                os.kill(cluster.pid_of("walwriter"), signal.SIGSTOP)
                assert site.stdin is not None
                site.stdin.write("go\n")
                site.stdin.flush()
                answer = json.loads(_line(site, 60))
                cluster.crash()
            finally:
                site.kill()
        assert (answer["text"], answer["status"]) == ("ran before the crash", "succeeded")

        started = time.monotonic()
        cluster.start()
        row = cluster.psql(
            "site",
            "SELECT status, finished_at IS NOT NULL FROM nr_llm_toolcall WHERE id = '{}'".format(
                answer["call_id"]
            ),
        )
        assert row == "succeeded|t", (
            f"after crash recovery ({time.monotonic() - started:.1f} s) the ledger row of call "
            f"{answer['call_id']}, which ran, is {row or 'gone'!r}"
        )
