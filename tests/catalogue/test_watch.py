"""Watched servers (catalogue/watch.py): a change a server announces reaches the catalogue
within seconds, in both eras, against a real server that counts what it was asked
(tests/peers/changing_server.py); storms and dying listeners cost bounded work."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.watch import ServerWatch, Watcher, WatchTiming
from nr_llm.models import McpServer, McpTool
from tests import catalogue_peers
from tests.peers import running, sdk_server

from ..factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]

FAST = WatchTiming(debounce_seconds=0.2, min_import_seconds=1.0, window_seconds=30.0, healthy_seconds=3.0)


def _server(*args: str) -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server", *args]) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def handshake() -> Iterator[str]:
    yield from _server()


@pytest.fixture
def modern() -> Iterator[str]:
    yield from _server("--modern")


def _seen(base: str) -> dict[str, Any]:
    return requests.get(f"{base}/seen", timeout=5).json()  # type: ignore[no-any-return]


def _until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _watched(base: str) -> McpServer:
    return McpServerFactory.create(identifier="changing", url=f"{base}/mcp", watch_changes=True)


def _importer(server: McpServer) -> None:
    import_catalogue(server)


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_tool_added_on_a_watched_server_reaches_the_catalogue_within_seconds(
    era: str, request: pytest.FixtureRequest
) -> None:
    """The listener hears the change (the GET stream, or subscriptions/listen) and the
    re-import brings the new tool, disabled as every imported tool starts."""
    base = request.getfixturevalue(era)
    server = _watched(base)
    watch = ServerWatch(server, _importer, FAST)
    watch.start()
    try:
        assert _until(lambda: McpTool.objects.filter(tool_name="mcp_changing_echo").exists(), 10)
        assert _until(lambda: _seen(base)["streams"] == 1, 10)
        added = time.monotonic()
        requests.post(f"{base}/add/grown", timeout=5)
        assert _until(lambda: McpTool.objects.filter(tool_name="mcp_changing_grown").exists(), 10)
        assert time.monotonic() - added < 5
        assert McpTool.objects.get(tool_name="mcp_changing_grown").enabled is False
    finally:
        watch.close()


def test_a_changed_enabled_tool_is_disabled_for_review(handshake: str) -> None:
    """As on a manual import: an enabled tool whose description changed is disabled."""
    server = _watched(handshake)
    import_catalogue(server)
    McpTool.objects.filter(tool_name="mcp_changing_echo").update(enabled=True)
    watch = ServerWatch(server, _importer, FAST)
    watch.start()
    try:
        assert _until(lambda: _seen(handshake)["streams"] == 1, 10)
        requests.post(f"{handshake}/describe/echo", data=b"Now it shouts.", timeout=5)
        assert _until(lambda: McpTool.objects.get(tool_name="mcp_changing_echo").enabled is False, 10)
        assert McpTool.objects.get(tool_name="mcp_changing_echo").description == "Now it shouts."
    finally:
        watch.close()


def test_a_change_every_10_ms_re_imports_a_bounded_number_of_times(modern: str) -> None:
    """300 changes over about 3 s: the server is asked for its list a handful of times (one per
    minimum interval, plus the watch's first), and the catalogue ends with every tool."""
    server = _watched(modern)
    watch = ServerWatch(server, _importer, FAST)
    watch.start()
    try:
        assert _until(lambda: _seen(modern)["streams"] == 1, 10)
        assert _until(lambda: _seen(modern)["seen"].get("tools/list", 0) == 1, 10)
        requests.post(f"{modern}/storm/300", timeout=5)
        assert _until(lambda: McpTool.objects.filter(tool_name="mcp_changing_storm_0299").exists(), 15)
        lists = _seen(modern)["seen"]["tools/list"]
        # About 3.5 s of storm at one import per second at most, plus the first import.
        assert 2 <= lists <= 7, lists
        assert watch.reimports.count == lists
    finally:
        watch.close()


def test_a_listener_that_dies_every_second_backs_off(tmp_path: Any) -> None:
    """Each stream ends after 1 s: reopened after 1, 2, 4 s..., so in 8 s a few streams, and
    re-imports bounded by the minimum interval."""
    for base in _server("--listen-lifetime", "1"):
        server = _watched(base)
        watch = ServerWatch(server, _importer, FAST)
        watch.start()
        try:
            time.sleep(8)
        finally:
            watch.close()
        seen = _seen(base)
        # Windows at about 0, 2, 5 and maybe 10 s (1 s of stream, then 1, 2, 4 s of back-off).
        assert 2 <= seen["streams"] <= 4, seen
        assert seen["seen"]["tools/list"] <= seen["streams"] + 1, seen


def test_an_unreachable_server_is_retried_with_back_off_and_the_site_keeps_serving() -> None:
    """Nobody listens at the URL: each attempt fails fast and the next waits longer."""
    server = McpServerFactory.create(identifier="gone", url="http://127.0.0.1:9/mcp", watch_changes=True)
    watch = ServerWatch(server, lambda server: None, FAST)
    watch.start()
    time.sleep(4)
    watch.close()
    # Attempts at about 0, 1, 3 s: the back-off doubles.
    assert 2 <= watch.windows <= 4, watch.windows


def test_the_watcher_starts_and_stops_watches_as_operators_mark_servers(handshake: str) -> None:
    """A server marked later is watched after the next reload; one unmarked is let go."""
    server = McpServerFactory.create(identifier="changing", url=f"{handshake}/mcp", watch_changes=False)
    watcher = Watcher(_importer, FAST)
    stop, reloaded = threading.Event(), threading.Event()
    thread = threading.Thread(target=watcher.run, args=(stop, 0.2, reloaded.set))
    thread.start()
    try:
        # A reload has read the servers (tick runs after each): the unmarked one is not watched.
        assert reloaded.wait(10)
        assert watcher.watches == {}
        McpServer.objects.filter(pk=server.pk).update(watch_changes=True)
        assert _until(lambda: server.pk in watcher.watches, 5)
        assert _until(lambda: _seen(handshake)["streams"] == 1, 10)
        McpServer.objects.filter(pk=server.pk).update(watch_changes=False)
    finally:
        stop.set()
        thread.join(40)
    assert not thread.is_alive()


def test_a_tool_added_on_a_watched_sdk_server_reaches_the_catalogue_within_seconds() -> None:
    """The official SDK server (2026-07-28, ``subscriptions/listen``): a tool added and
    announced there is in the catalogue within seconds."""
    with sdk_server("--growable") as url:
        server = McpServerFactory.create(identifier="sdk", url=url, watch_changes=True)
        watch = ServerWatch(server, _importer, FAST)
        watch.start()
        try:
            assert _until(lambda: McpTool.objects.filter(tool_name="mcp_sdk_echo").exists(), 15)
            # The stream is open once the SDK logged its listen request.
            log = url.replace("/mcp", "/requests")
            assert _until(
                lambda: any(
                    r["method"] == "subscriptions/listen" for r in requests.get(log, timeout=5).json()
                ),
                10,
            )
            added = time.monotonic()
            requests.post(url.replace("/mcp", "/grow/deployed_later"), timeout=5)
            assert _until(lambda: McpTool.objects.filter(tool_name="mcp_sdk_deployed_later").exists(), 10)
            assert time.monotonic() - added < 5
        finally:
            watch.close()


def test_a_stream_that_never_ends_is_renewed_each_window_without_re_imports(handshake: str) -> None:
    """Windows of 1.5 s over about 5 s: the stream is reopened each window, and a window that
    simply ran out costs no re-import (only the watch's first)."""
    server = _watched(handshake)
    timing = dataclasses.replace(FAST, window_seconds=1.5)
    watch = ServerWatch(server, _importer, timing)
    watch.start()
    try:
        assert _until(lambda: _seen(handshake)["streams"] >= 3, 10)
    finally:
        watch.close()
    assert _seen(handshake)["seen"]["tools/list"] == 1
    assert watch.reimports.count == 1


@pytest.mark.parametrize("era", [(), ("--modern",)], ids=["handshake-405", "modern-32601"])
def test_a_server_without_a_change_stream_is_asked_again_only_after_the_longest_back_off(
    caplog: pytest.LogCaptureFixture, era: tuple[str, ...]
) -> None:
    """A server with no change stream (GET answered 405; subscriptions/listen -32601): one
    attempt, then nothing for the longest back-off, no re-import beyond the watch's first."""
    for base in _server("--no-stream", *era):
        server = _watched(base)
        timing = dataclasses.replace(FAST, max_backoff_seconds=30.0)
        watch = ServerWatch(server, _importer, timing)
        watch.start()
        try:
            assert _until(lambda: "offers no change stream" in caplog.text, 15)
            # The next attempt is scheduled at the longest back-off, not sooner.
            assert "asking again in 30 s" in caplog.text

            def first_done(current: ServerWatch = watch) -> bool:
                return current.reimports.count == 1  # the watch's first

            assert _until(first_done, 10)
        finally:
            watch.close()
        assert watch.windows == 1
        assert watch.reimports.count == 1
