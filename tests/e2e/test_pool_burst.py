"""Django's psycopg pool at its default size serves a burst of 40 concurrent calls, and the
process's queries still work afterwards: no thread the package starts keeps a pooled
connection it is not using."""

import json
import os
import subprocess
import sys
from importlib.util import find_spec

import pytest
from django.db import connection

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from tests.factories import McpServerFactory
from tests.peers import ROOT, sdk_server

CALLS = 40

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
    # A starved pool makes each wait last its 30 s timeout: let the assertions say so.
    pytest.mark.timeout(400),
    pytest.mark.skipif(
        connection.vendor != "postgresql" or find_spec("psycopg_pool") is None,
        reason="Django's connection pool is psycopg 3's (OPTIONS['pool']): run in the psycopg 3 job",
    ),
]


def test_the_default_pool_survives_a_burst_of_40_concurrent_calls(settings):
    """40 calls at once through ``aexecute`` in a site process on the pool (4 connections by
    default): every call answers, every row is finished, and the process's next query gets a
    connection at once (no pool timeout)."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="pool", name="Pool", url=url)
        assert import_catalogue(server).ok
        McpTool.objects.update(enabled=True)
        McpServer.objects.filter(pk=server.pk).update(requires_approval=False, max_concurrent_calls=None)
        done = subprocess.run(
            [sys.executable, "-m", "tests.e2e.pool_site", str(CALLS)],
            cwd=ROOT,
            env={
                **os.environ,
                "NR_LLM_POOL_DATABASE": connection.settings_dict["NAME"],
                "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true",
            },
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-4000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["texts"] == [f"burst {n}" for n in range(CALLS)], seen["texts"]
    assert (seen["finished"], seen["after"]) == (CALLS, ""), seen
    # Waiting for a pooled connection ends at the pool's timeout (30 s): a burst or a query that
    # took that long waited for connections the package's threads kept.
    assert seen["burst_seconds"] < 30 and seen["after_seconds"] < 5, seen
    assert "couldn't get a connection" not in done.stderr, done.stderr[-4000:]
    assert ToolCall.objects.filter(pk__in=seen["ids"], status=ToolCallStatus.SUCCEEDED).count() == CALLS
