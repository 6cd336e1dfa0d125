"""The periodic re-import (``nr_llm.tasks.reimport_catalogues``, ``NR_LLM_REIMPORT_INTERVAL``)
and ``manage.py mcp_watch``, against a real server that counts its ``tools/list`` answers."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import requests
from django.core.management import call_command
from django.utils import timezone

from nr_llm.checks import check_reimport_interval
from nr_llm.models import McpServer, McpTool
from nr_llm.tasks import reimport_catalogues
from tests import catalogue_peers
from tests.peers import running

from ..factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def base() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server"]) as port:
        yield f"http://127.0.0.1:{port}"


def _lists(base: str) -> int:
    return int(requests.get(f"{base}/seen", timeout=5).json()["seen"].get("tools/list", 0))


def test_nothing_is_re_imported_while_the_interval_is_unset(base: str, settings: Any) -> None:
    """Off by default: the task runs and asks no server anything."""
    McpServerFactory.create(identifier="changing", url=f"{base}/mcp")
    assert reimport_catalogues.call() == {"interval": None, "imported": []}
    assert _lists(base) == 0


def test_servers_due_are_re_imported_and_the_others_left_alone(base: str, settings: Any) -> None:
    """Never imported or imported before the interval: re-imported; imported recently, watched
    or disabled: left alone."""
    settings.NR_LLM_REIMPORT_INTERVAL = 3600
    due = McpServerFactory.create(identifier="changing", url=f"{base}/mcp")
    stale = McpServerFactory.create(identifier="stale", url=f"{base}/mcp")
    McpServer.objects.filter(pk=stale.pk).update(last_imported=timezone.now() - timedelta(hours=2))
    recent = McpServerFactory.create(identifier="recent", url=f"{base}/mcp")
    McpServer.objects.filter(pk=recent.pk).update(last_imported=timezone.now() - timedelta(minutes=5))
    McpServerFactory.create(identifier="watched", url=f"{base}/mcp", watch_changes=True)
    McpServerFactory.create(identifier="off", url=f"{base}/mcp", enabled=False)
    assert reimport_catalogues.call() == {"interval": 3600, "imported": ["changing", "stale"]}
    assert _lists(base) == 2
    assert McpTool.objects.filter(server=due, tool_name="mcp_changing_echo").exists()
    # Run again at once: both were just imported, nothing is due.
    assert reimport_catalogues.call()["imported"] == []
    assert _lists(base) == 2


@pytest.mark.parametrize(
    ("raw", "ids"), [(None, []), (0, []), (600, []), ("soon", ["nr_llm.E046"]), (-5, ["nr_llm.E046"])]
)
def test_the_interval_setting_is_checked(settings: Any, raw: object, ids: list[str]) -> None:
    settings.NR_LLM_REIMPORT_INTERVAL = raw
    assert [error.id for error in check_reimport_interval()] == ids


def test_mcp_watch_watches_marked_servers_and_stops_on_time(base: str) -> None:
    """The command imports a watched server when it starts watching, and ends after --seconds."""
    McpServerFactory.create(identifier="changing", url=f"{base}/mcp", watch_changes=True)
    out = io.StringIO()
    call_command("mcp_watch", "--seconds", "3", "--reload", "0.5", stdout=out)
    assert "changing: changed, re-import ran" in out.getvalue()
    assert out.getvalue().rstrip().endswith("Stopped watching.")
    assert McpTool.objects.filter(tool_name="mcp_changing_echo").exists()
