"""The shared cache's rules (protocol/shared_cache.py), with no Django: a plain in-memory
backend stands for the site's cache (the four-process tests over Redis and the database cache
are tests/servers/test_shared_caches.py)."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm.mcp import Endpoint
from nr_llm.mcp.protocol.client import _cache_hint
from nr_llm.mcp.protocol.shared_cache import (
    FAILURE_BACKOFF_SECONDS,
    SHARED_RECHECK_SECONDS,
    GuardedCache,
    SharedEraCache,
    ToolsCache,
    tools_lifetime,
)

SECRET = b"k" * 32
URL = "https://mcp.example/mcp?token=very-secret"
NS = 1_000_000_000


class Backend:
    """A cache backend with Django's get/set/delete; ``down`` makes every call raise."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.timeouts: dict[str, float] = {}
        self.down = False
        self.calls = 0

    def get(self, key: str, default: Any = None) -> Any:
        self._touch()
        return self.values.get(key, default)

    def set(self, key: str, value: Any, timeout: float | None = None) -> None:
        self._touch()
        self.values[key] = value
        self.timeouts[key] = timeout or 0

    def delete(self, key: str) -> None:
        self._touch()
        self.values.pop(key, None)

    def _touch(self) -> None:
        self.calls += 1
        if self.down:
            raise ConnectionError("redis://user:pw@cache:6379 is down")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_verdict_learnt_in_one_process_is_read_in_another() -> None:
    """Two caches over one backend (two processes): the second knows the era without a probe,
    and holds it locally only briefly (the shared entry's age is unknown)."""
    backend = Backend()
    first, second = (
        SharedEraCache(GuardedCache(backend, SECRET)),
        SharedEraCache(GuardedCache(backend, SECRET)),
    )
    key = first.key_for(URL)
    first.remember(key, "modern", "2026-07-28", 600, 0)
    assert backend.timeouts[key] == 600
    verdict = second.get(second.key_for(URL), 0)
    assert verdict is not None and (verdict.era, verdict.version) == ("modern", "2026-07-28")
    assert verdict.expires_ns == int(SHARED_RECHECK_SECONDS * NS)


def test_keys_hide_the_url_and_differ_by_secret_and_by_query() -> None:
    """The key is a digest: no query token in it; another site's secret, another key."""
    ours, theirs = GuardedCache(Backend(), SECRET), GuardedCache(Backend(), b"x" * 32)
    key = ours.key("era", URL)
    assert "very-secret" not in key and "mcp.example" not in key
    assert key != theirs.key("era", URL)
    assert key != ours.key("era", "https://mcp.example/mcp?token=other")
    assert key == ours.key("era", "HTTPS://MCP.example/mcp?token=very-secret#x")


def test_a_forgotten_verdict_is_deleted_for_every_process() -> None:
    backend = Backend()
    first, second = (
        SharedEraCache(GuardedCache(backend, SECRET)),
        SharedEraCache(GuardedCache(backend, SECRET)),
    )
    key = first.key_for(URL)
    first.remember(key, "handshake", "", 600, 0)
    first.forget(key)
    assert second.get(key, 0) is None


@pytest.mark.parametrize(
    "garbage",
    [
        "modern",
        {"era": "future", "version": "x", "seconds": 5},
        {"era": "modern", "version": "", "seconds": 5},
        {"era": "handshake", "version": "", "seconds": 0},
        {"era": "handshake", "version": "", "seconds": True},
    ],
)
def test_an_entry_that_is_no_verdict_is_a_miss(garbage: Any) -> None:
    """Another version's entry or garbage costs a probe, never a wrong era."""
    backend = Backend()
    cache = SharedEraCache(GuardedCache(backend, SECRET))
    key = cache.key_for(URL)
    backend.values[key] = garbage
    assert cache.get(key, 0) is None


def test_a_failing_backend_is_a_miss_and_left_alone_for_a_while(caplog: pytest.LogCaptureFixture) -> None:
    """One warning naming the exception's class (never its message, which may hold the cache's
    password), then no call reaches the backend until the back-off ends."""
    backend, clock = Backend(), Clock()
    guarded = GuardedCache(backend, SECRET, monotonic=clock)
    cache = SharedEraCache(guarded)
    key = cache.key_for(URL)
    backend.down = True
    assert cache.get(key, 0) is None
    cache.remember(key, "handshake", "", 600, 0)  # kept locally, not written
    assert backend.calls == 1
    assert cache.get(key, 0) is not None  # the local tier still serves
    assert [r.getMessage() for r in caplog.records if "shared MCP cache" in r.getMessage()] == [
        "the shared MCP cache failed to read (ConnectionError); caching per process for 30 s"
    ]
    assert "pw" not in caplog.text
    backend.down = False
    clock.now += FAILURE_BACKOFF_SECONDS
    cache.forget(key)
    assert backend.calls == 2


def _endpoint(**kwargs: Any) -> Endpoint:
    return Endpoint("s", "https://mcp.example/mcp", 10, **kwargs)


def test_a_public_answer_is_shared_whatever_the_credential() -> None:
    cache = ToolsCache(GuardedCache(Backend(), SECRET))
    cache.remember(_endpoint(credential="a", auth_placement="bearer"), [{"name": "echo"}], 60000, "public")
    assert cache.get(_endpoint(credential="b", auth_placement="bearer")) == [{"name": "echo"}]


def test_a_private_answer_is_shared_only_with_the_same_credential() -> None:
    """``cacheScope`` private (or none): another credential does not see it."""
    backend = Backend()
    cache = ToolsCache(GuardedCache(backend, SECRET))
    cache.remember(_endpoint(credential="key-a", auth_placement="bearer"), [{"name": "echo"}], 60000, None)
    assert cache.get(_endpoint(credential="key-a", auth_placement="bearer")) == [{"name": "echo"}]
    assert cache.get(_endpoint(credential="key-b", auth_placement="bearer")) is None
    assert cache.get(_endpoint(credential="key-a", auth_placement="header", auth_header_name="X-Key")) is None
    assert not any("key-a" in key for key in backend.values)


def test_an_answer_without_a_ttl_is_not_shared_and_replaces_an_older_one() -> None:
    cache = ToolsCache(GuardedCache(Backend(), SECRET))
    cache.remember(_endpoint(), [{"name": "old"}], 60000, "public")
    cache.remember(_endpoint(), [{"name": "new"}], 0, "public")
    assert cache.get(_endpoint()) is None


def test_the_lifetime_is_the_servers_ttl_capped_at_an_hour() -> None:
    assert tools_lifetime(1500) == 1.5
    assert tools_lifetime(10**12) == 3600
    assert tools_lifetime(0) == tools_lifetime(-5) == tools_lifetime("60000") == tools_lifetime(True) == 0


def test_pages_share_the_shortest_ttl_and_are_public_only_if_every_page_is() -> None:
    assert _cache_hint([(60000, "public"), (1000, "public")]) == (1000, "public")
    assert _cache_hint([(60000, "public"), (1000, None)]) == (1000, "private")
    assert _cache_hint([(60000, "public"), (None, "public")]) == (0, "private")
    assert _cache_hint([]) == (0, "private")


def test_a_wrong_shared_verdict_costs_one_probe_never_a_wrong_answer() -> None:
    """Another process left "modern" for a handshake-era server: the call is refused before
    running (no session: 404), the client probes once, runs it once the right way, and the
    shared entry is corrected for every process."""
    import sys

    import requests

    from nr_llm.mcp import ConnectionSettings, McpClient
    from tests.peers import running

    backend = Backend()
    with running([sys.executable, "-m", "tests.peers.changing_server"]) as port:
        base = f"http://127.0.0.1:{port}"
        era_cache = SharedEraCache(GuardedCache(backend, SECRET))
        key = era_cache.key_for(f"{base}/mcp")
        backend.values[key] = {"era": "modern", "version": "2026-07-28", "seconds": 600}
        client = McpClient(connection=ConnectionSettings(allow_private_networks=True), era_cache=era_cache)
        outcome = client.call_tool(Endpoint("changing", f"{base}/mcp", 10), "echo", {"text": "hi"})
        seen = requests.get(f"{base}/seen", timeout=5).json()
    assert outcome.text == "hi" and outcome.era == "handshake"
    assert seen["ran"] == 1 and seen["seen"]["server/discover"] == 1
    assert backend.values[key]["era"] == "handshake"
