"""Era verdicts and ``tools/list`` answers shared between processes through a cache the app
hands in (the Django side: ``django.core.cache.caches[NR_LLM_CACHE]``; this package imports no
Django).

What is shared is a hint, never an authority: a verdict read from the cache is used as a
remembered one is (a server that changed era refuses in a way that proves nothing ran, and
the client negotiates again), and a ``tools/list`` answer is shared only for the ``ttlMs`` the
server gave it and only within the ``cacheScope`` it allowed. A stale or wrong entry therefore
costs one extra request, never a wrong answer; a cache that fails or hangs up is read as a miss
and left alone for a while, so the site keeps serving with per-process caching.

Keys are keyed digests (the app's secret, the same in every process) of the endpoint URL, so a
URL's query, where tokens travel, never reaches the cache server in the clear; a private
``tools/list`` answer is keyed by a digest of the credential that fetched it as well. Entries
expire by the cache backend's own clock (Redis: its server's; the database cache: the clock of
the host that reads): no timestamp of this process is stored.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, Protocol

from .endpoint import Endpoint
from .eras import MAXIMUM_ERA_CACHE_SECONDS, Era, EraCache, Verdict

logger = logging.getLogger("nr_llm.mcp")

# A verdict another process stored is held in this process at most this long before the
# shared entry is read again: what another process learnt (an era changed) reaches this one
# within seconds, at the cost of one cache read per server per interval.
SHARED_RECHECK_SECONDS = 5.0
# After the shared cache failed, it is left alone this long (one warning per interval).
FAILURE_BACKOFF_SECONDS = 30.0
# The longest a tools/list answer is shared, whatever ttlMs a server asks for.
MAXIMUM_TOOLS_CACHE_SECONDS = 3600.0
_NS = 1_000_000_000
_PREFIX = "nr_llm:mcp:v1"


class SharedCache(Protocol):
    """The part of Django's cache API used here (``get``, ``set`` with a timeout in seconds,
    ``delete``); any backend with those three will do."""

    def get(self, key: str, default: Any = None) -> Any: ...

    def set(self, key: str, value: Any, timeout: float | None = ...) -> Any: ...

    def delete(self, key: str) -> Any: ...


class GuardedCache:
    """A shared cache whose failures are misses: an exception from the backend (a Redis that
    is down, a cache table that is missing) is logged once and the backend skipped for
    ``FAILURE_BACKOFF_SECONDS``, during which every read misses and every write is dropped."""

    def __init__(
        self, backend: SharedCache, secret: bytes, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self.backend = backend
        self._secret = secret
        self._monotonic = monotonic
        self._down_until = 0.0
        self._lock = threading.Lock()

    def key(self, kind: str, url: str, context: str = "") -> str:
        """A digest of the endpoint URL (whole: its query tells tenants apart) and of the
        authorization ``context``, keyed with the app's secret."""
        canonical = _canonical(url)
        digest = hashlib.blake2b(
            f"{kind}\0{canonical}\0{context}".encode(), key=self._secret[:64], digest_size=20
        ).hexdigest()
        return f"{_PREFIX}:{kind}:{digest}"

    def get(self, key: str) -> Any:
        if self._skipping():
            return None
        try:
            return self.backend.get(key)
        except Exception as exc:
            # A cache boundary: whatever the backend raises, the answer is "not cached".
            self._failed("read", exc)
            return None

    def set(self, key: str, value: Any, seconds: float) -> None:
        if self._skipping():
            return
        try:
            self.backend.set(key, value, seconds)
        except Exception as exc:
            self._failed("write", exc)

    def delete(self, key: str) -> None:
        if self._skipping():
            return
        try:
            self.backend.delete(key)
        except Exception as exc:
            self._failed("delete", exc)

    def _skipping(self) -> bool:
        return self._monotonic() < self._down_until

    def _failed(self, what: str, exc: Exception) -> None:
        with self._lock:
            if self._skipping():
                return
            self._down_until = self._monotonic() + FAILURE_BACKOFF_SECONDS
        # The exception's class only: a backend's message may quote its URL and password.
        logger.warning(
            "the shared MCP cache failed to %s (%s); caching per process for %g s",
            what,
            type(exc).__name__,
            FAILURE_BACKOFF_SECONDS,
        )


class SharedEraCache(EraCache):
    """Era verdicts in this process, backed by the shared cache: a miss here reads the shared
    entry, a verdict learnt here is written there, a verdict dropped here is deleted there."""

    def __init__(self, shared: GuardedCache) -> None:
        super().__init__()
        self.shared = shared

    def key_for(self, url: str) -> str:
        return self.shared.key("era", url)

    def get(self, key: str, now_ns: int) -> Verdict | None:
        verdict = super().get(key, now_ns)
        if verdict is not None:
            return verdict
        value = self.shared.get(key)
        era, version, seconds = _verdict_of(value)
        if era is None:
            return None
        # Held here briefly, not for its whole lifetime: the shared entry's age is unknown.
        held = min(seconds, SHARED_RECHECK_SECONDS)
        super().remember(key, era, version, held, now_ns)
        return Verdict(era, version, now_ns + int(held * _NS))

    def remember(self, key: str, era: Era, version: str, seconds: float, now_ns: int) -> None:
        super().remember(key, era, version, seconds, now_ns)
        if seconds > 0:
            self.shared.set(key, {"era": era, "version": version, "seconds": seconds}, seconds)
        else:
            self.shared.delete(key)

    def forget(self, key: str) -> None:
        super().forget(key)
        self.shared.delete(key)


def _verdict_of(value: Any) -> tuple[Era | None, str, float]:
    """A stored verdict, or (None, ...) for anything else (another version's entry, garbage)."""
    if not isinstance(value, dict):
        return None, "", 0.0
    era, version, seconds = value.get("era"), value.get("version"), value.get("seconds")
    if era not in ("handshake", "modern") or not isinstance(version, str):
        return None, "", 0.0
    if era == "modern" and not version:
        return None, "", 0.0
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not seconds > 0:
        return None, "", 0.0
    return era, version, min(float(seconds), MAXIMUM_ERA_CACHE_SECONDS)


class ToolsCache:
    """The last complete ``tools/list`` answer of an endpoint, shared for the ``ttlMs`` its
    server gave: ``public`` answers by URL, ``private`` ones (the default when a server names
    no scope) only for the same credential. An answer fetched with an OAuth token is shared
    only when public: its authorization context is a grant whose token rotates."""

    def __init__(self, shared: GuardedCache) -> None:
        self.shared = shared

    def get(self, endpoint: Endpoint) -> list[dict[str, Any]] | None:
        for key in self._keys(endpoint):
            if not key:
                continue
            value = self.shared.get(key)
            tools = value.get("tools") if isinstance(value, dict) else None
            if isinstance(tools, list) and all(isinstance(tool, dict) for tool in tools):
                return tools
        return None

    def remember(
        self, endpoint: Endpoint, tools: list[dict[str, Any]], ttl_ms: object, scope: object
    ) -> None:
        """Store ``tools`` when the server allowed it (a positive ``ttlMs``); else drop any
        older entry, so nothing staler than the answer just fetched is read again."""
        seconds = tools_lifetime(ttl_ms)
        public_key, private_key = self._keys(endpoint)
        if seconds <= 0:
            self.forget(endpoint)
            return
        if scope == "public":
            self.shared.set(public_key, {"tools": tools}, seconds)
        elif private_key:
            self.shared.set(private_key, {"tools": tools}, seconds)

    def forget(self, endpoint: Endpoint) -> None:
        for key in self._keys(endpoint):
            if key:
                self.shared.delete(key)

    def _keys(self, endpoint: Endpoint) -> tuple[str, str]:
        """The public key, and the private one ("" when private answers are not shared)."""
        public = self.shared.key("tools", endpoint.url)
        if endpoint.oauth is not None:
            return public, ""
        context = f"{endpoint.auth_placement}:{endpoint.auth_header_name}:{endpoint.credential or ''}"
        return public, self.shared.key("tools", endpoint.url, context)


def tools_lifetime(ttl_ms: object) -> float:
    """Seconds a ``tools/list`` answer may be shared: a positive integer ``ttlMs`` (capped),
    else 0 (``ttlMs`` 0 or absent: the answer is stale at once)."""
    if isinstance(ttl_ms, int) and not isinstance(ttl_ms, bool) and ttl_ms > 0:
        return min(ttl_ms / 1000, MAXIMUM_TOOLS_CACHE_SECONDS)
    return 0.0


def _canonical(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))
