from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses

from nr_llm.mcp.protocol import eras
from nr_llm.mcp.protocol.eras import EraCache, cache_key

from .scripted import URL, FakeClock


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mocked:
        yield mocked


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def era_cache(monkeypatch: pytest.MonkeyPatch) -> EraCache:
    """Each test gets its own process cache, in which the scripted server is already known as
    a handshake-era server (steady state: no probe), so the handshake tests see exactly the
    handshake's legs. Era tests start from ``era_cache.clear()``."""
    cache = EraCache()
    # Expiry far beyond any clock a test uses (fake or monotonic).
    cache.remember(cache_key(URL), "handshake", "", 1.0, 2**62)
    monkeypatch.setattr(eras, "_PROCESS_CACHE", cache)
    return cache
