"""Which protocol era an origin speaks, remembered per process so that steady state costs
one POST per tool call against a 2026-07-28 server.

The verdict is keyed by the endpoint URL: scheme, host, port and path as they are, the query
only as a keyed digest, userinfo and fragment dropped. Two servers never share a verdict, not
even two tenants of one host told apart by their query (``?tenant=a``, ``?tenant=b``: behind one
URL path they may be different backends), and a secret in a URL never becomes readable in a
key: the query, where URLs carry tokens, is hashed with a key drawn at random per process (the
cache lives no longer), so even a short secret cannot be recovered by guessing from a key that
reached a log. It is
kept for the server's ``ttlMs`` when the discover result gives a positive one, else for the
installation's lifetime (``NR_LLM_MCP_ERA_CACHE_SECONDS``, passed in by the app: this
package reads no Django setting). A verdict is only a guess about the next request: every
2026 request states its revision, a server that changed era answers it with an error that
proves the call was not run, and the client then drops the verdict and negotiates again.
Each process keeps its own cache; the app may back it with one that processes share
(shared_cache.py), so that a site's workers probe a server once between them.
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
# A server's ttlMs is honoured up to a day: a verdict is re-checked at least that often.
MAXIMUM_ERA_CACHE_SECONDS = 86_400.0
# Origins remembered per process; the least recently stored is dropped first.
MAXIMUM_ORIGINS = 1024

_NS = 1_000_000_000
# The key of the query digest: random per process, like the cache it keys.
_QUERY_KEY = secrets.token_bytes(32)


@dataclass(frozen=True)
class Verdict:
    era: Era
    # The revision requests are stamped with in the modern era ("" for the handshake era,
    # which negotiates its revision per session).
    version: str
    expires_ns: int


def cache_key(url: str) -> str:
    """The endpoint URL without userinfo or fragment, its query as a keyed digest; scheme and
    host lower-cased."""
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
    """How long to keep a verdict: a positive integer ``ttlMs`` (capped at a day), else the default."""
    if isinstance(ttl_ms, int) and not isinstance(ttl_ms, bool) and ttl_ms > 0:
        return min(ttl_ms / 1000, MAXIMUM_ERA_CACHE_SECONDS)
    return min(max(default_seconds, 0.0), MAXIMUM_ERA_CACHE_SECONDS)


class EraCache:
    """Verdicts by origin, with expiry on the caller's monotonic clock; thread-safe.

    Fork-safe: a forked child (gunicorn ``--preload``) gets a new lock, since a thread of the
    parent may have held it at the fork and does not exist in the child to let it go. The
    verdicts are kept: they describe servers, not the process.
    """

    def __init__(self, maximum: int = MAXIMUM_ORIGINS) -> None:
        self._maximum = maximum
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        _CACHES.add(self)

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()

    def key_for(self, url: str) -> str:
        """The key ``url``'s verdict is kept under (a shared cache keys it differently)."""
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
