"""The caches processes share (era verdicts, ``tools/list`` answers), over Django's cache
framework: ``caches[NR_LLM_CACHE]``, whatever backend the site configured (Redis, the database
cache, memcached). Unset, they stay in each process's memory (the client's own caches).

One ``SharedEraCache`` per alias per process: its in-process tier must outlive the client, which
is built per operation. The keys are digests keyed with a key derived from ``SECRET_KEY``, the
same in every process of the site and never a key an attacker reading the cache could use.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.db import BaseDatabaseCache
from django.db import router, transaction
from django.utils.crypto import salted_hmac

from ..conf import conf
from ..mcp import GuardedCache, SharedEraCache, ToolsCache

_lock = threading.Lock()
_by_alias: dict[str, tuple[SharedEraCache, ToolsCache]] = {}


def shared_caches() -> tuple[SharedEraCache, ToolsCache] | None:
    """The era and tools caches over ``NR_LLM_CACHE``, or None when caching stays per process."""
    alias = conf.CACHE
    if alias is None:
        return None
    with _lock:
        found = _by_alias.get(alias)
        if found is None:
            secret = salted_hmac("nr_llm.mcp.shared-cache", "keys", algorithm="sha256").digest()
            guarded = GuardedCache(AliasCache(alias), secret)
            found = _by_alias[alias] = (SharedEraCache(guarded), ToolsCache(guarded))
        return found


class AliasCache:
    """``caches[alias]`` looked up on every call: Django hands each thread its own backend
    object (a memcached client is not thread-safe), and the shared caches serve every thread.

    The database cache's statements run in a savepoint of their own when a caller's transaction
    is open: a failing one (its table missing) then rolls back to it and leaves the caller's
    transaction usable, where it would otherwise break it for every later statement."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def get(self, key: str, default: Any = None) -> Any:
        backend = caches[self.alias]
        with _contained(backend):
            return backend.get(key, default)

    def set(self, key: str, value: Any, timeout: float | None = None) -> None:
        backend = caches[self.alias]
        with _contained(backend):
            backend.set(key, value, timeout)

    def delete(self, key: str) -> None:
        backend = caches[self.alias]
        with _contained(backend):
            backend.delete(key)


@contextlib.contextmanager
def _contained(backend: object) -> Iterator[None]:
    if isinstance(backend, BaseDatabaseCache):
        using = router.db_for_write(backend.cache_model_class)
        if transaction.get_connection(using).in_atomic_block:
            with transaction.atomic(using=using):
                yield
            return
    yield


def forget_shared_caches() -> None:
    """Drop this process's handles (tests switching backends; a changed setting)."""
    with _lock:
        _by_alias.clear()
