"""Fixtures shared by every test folder (registered here once, so a session fixture starts once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nr_llm.mcp.eras import process_cache
from tests.oauth_peers import oauth_peers
from tests.tls import tls

__all__ = ["oauth_peers", "tls"]


@pytest.fixture(autouse=True)
def _forget_protocol_eras() -> Iterator[None]:
    """The process-wide era cache starts empty in each test: an OS-chosen port reused by a
    server of the other era must not inherit a verdict from an earlier test."""
    process_cache().clear()
    yield
    process_cache().clear()
