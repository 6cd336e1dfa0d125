"""A watched server-everything (the official TypeScript reference server, handshake era): a
tool deployed on it while the watch runs is in the catalogue within seconds. The listener holds
the session's GET stream; the SDK announces ``notifications/tools/list_changed`` there when a
tool is registered (tests/e2e/peers/grow.mjs deploys one on SIGUSR2)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.watch import ServerWatch, WatchTiming
from nr_llm.models import McpServer, McpTool
from tests import catalogue_peers
from tests.factories import McpServerFactory
from tests.peers import ROOT, announced_port, spawned

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]

PEERS = ROOT / "tests" / "e2e" / "peers"
EVERYTHING = PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _importer(server: McpServer) -> None:
    import_catalogue(server)


def _until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_tool_deployed_on_a_watched_server_everything_reaches_the_catalogue_within_seconds() -> None:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = [
        "node",
        "-r",
        str(PEERS / "loopback.cjs"),
        "--import",
        str(PEERS / "grow.mjs"),
        str(EVERYTHING),
        "streamableHttp",
    ]
    with spawned(command) as process:
        port = announced_port(process, 30)
        server = McpServerFactory.create(
            identifier="everything", url=f"http://127.0.0.1:{port}/mcp", watch_changes=True
        )
        timing = WatchTiming(debounce_seconds=0.2, min_import_seconds=1.0, window_seconds=30.0)
        watch = ServerWatch(server, _importer, timing)
        watch.start()
        try:
            assert _until(lambda: McpTool.objects.filter(tool_name="mcp_everything_echo").exists(), 15)
            assert not McpTool.objects.filter(tool_name="mcp_everything_deployed_later").exists()
            time.sleep(1)  # the listener's session and its GET stream are open by now
            deployed = time.monotonic()
            os.kill(process.pid, signal.SIGUSR2)
            assert _until(
                lambda: McpTool.objects.filter(tool_name="mcp_everything_deployed_later").exists(), 10
            )
            assert time.monotonic() - deployed < 5
            # Heard on the stream, not found by the watch's own catch-up: one window, one change.
            assert watch.reimports.count == 2 and watch.windows == 1
        finally:
            watch.close()
