"""Remember which protocol era each server speaks, so steady state costs one POST per tool call
against a 2026-07-28 server. A verdict is only a guess: a server that changed era refuses the
next request in a way that proves it did not run, and the client negotiates again.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import urllib.parse
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

Era = Literal["handshake", "modern"]

# The default lifetime of a verdict the server gave no positive ttlMs for (seconds).
DEFAULT_ERA_CACHE_SECONDS = 600.0
MAXIMUM_ERA_CACHE_SECONDS = 86_400.0
# Origins remembered per process; the least recently stored is dropped first.
MAXIMUM_ORIGINS = 1024

_NS = 1_000_000_000
# Random per process (the cache lives no longer), so a short secret in a query cannot be
# guessed back from a key that reached a log.
_QUERY_KEY = secrets.token_bytes(32)


@dataclass(frozen=True)
class Verdict:
    era: Era
    # "" for the handshake era, which negotiates its revision per session.
    version: str
    expires_ns: int


def cache_key(url: str) -> str:
    """The URL with its query as a digest: tenants told apart only by their query may be
    different backends, and a query may hold a token."""
    parts = urllib.parse.urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    query = ""
    if parts.query:
        digest = hashlib.blake2b(parts.query.encode(), key=_QUERY_KEY, digest_size=16).hexdigest()
        query = f"query-digest={digest}"
    return urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", query, ""))


def lifetime_seconds(ttl_ms: object, default_seconds: float) -> float:
    if isinstance(ttl_ms, int) and not isinstance(ttl_ms, bool) and ttl_ms > 0:
        return min(ttl_ms / 1000, MAXIMUM_ERA_CACHE_SECONDS)
    return min(max(default_seconds, 0.0), MAXIMUM_ERA_CACHE_SECONDS)


class EraCache:
    """Thread-safe; a forked child gets a new lock but keeps the verdicts (they describe servers)."""

    def __init__(self, maximum: int = MAXIMUM_ORIGINS) -> None:
        self._maximum = maximum
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        _CACHES.add(self)

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def key_for(self, url: str) -> str:
        return cache_key(url)

    def get(self, key: str, now_ns: int) -> Verdict | None:
        with self._lock:
            verdict = self._verdicts.get(key)
            if verdict is not None and verdict.expires_ns <= now_ns:
                del self._verdicts[key]
                return None
            return verdict

    def remember(self, key: str, era: Era, version: str, seconds: float, now_ns: int) -> None:
        if seconds <= 0:
            self.forget(key)
            return
        with self._lock:
            self._verdicts.pop(key, None)
            self._verdicts[key] = Verdict(era, version, now_ns + int(seconds * _NS))
            while len(self._verdicts) > self._maximum:
                self._verdicts.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._verdicts.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._verdicts.clear()


_CACHES: weakref.WeakSet[EraCache] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for cache in list(_CACHES):
        cache._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
_PROCESS_CACHE = EraCache()


def process_cache() -> EraCache:
    """The cache every client in this process shares unless it is given its own."""
    return _PROCESS_CACHE
