"""The caches processes share (era verdicts, ``tools/list`` answers), over Django's cache
framework: ``caches[NR_LLM_CACHE]``, whatever backend the site configured (Redis, the database
cache, memcached). Unset, they stay in each process's memory (the client's own caches).

One ``SharedEraCache`` per alias per process: its in-process tier must outlive the client, which
is built per operation. The keys are digests keyed with a key derived from ``SECRET_KEY``, the
same in every process of the site and never a key an attacker reading the cache could use.
"""

from __future__ import annotations

import threading

from django.core.cache import caches
from django.utils.crypto import salted_hmac

from ..conf import conf
from ..mcp.protocol.shared_cache import GuardedCache, SharedEraCache, ToolsCache

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
            guarded = GuardedCache(caches[alias], secret)
            found = _by_alias[alias] = (SharedEraCache(guarded), ToolsCache(guarded))
        return found


def forget_shared_caches() -> None:
    """Drop this process's handles (tests switching backends; a changed setting)."""
    with _lock:
        _by_alias.clear()
