"""Swap only the MCP client in a site's tests, so everything else (ceiling, approval, ledger)
runs as in production; process-wide, because a turn's calls run on other threads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..servers import endpoints


@contextmanager
def using_client(fake: object) -> Iterator[object]:
    """Within the block, the installation's MCP client is ``fake``; yields ``fake``."""
    endpoints._stand_in.append(fake)
    try:
        yield fake
    finally:
        endpoints._stand_in.remove(fake)
