"""Fixtures the end-to-end tests share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def live_server() -> Iterator[Any]:
    """pytest-django's live server with a connection per request thread, as a real server has.
    Its own hands an in-memory SQLite database's one connection to every request thread, and
    two requests at once on it (the Try page polls for a question while its POST runs) mix
    their rows: an IndexError in the session read, or a session that reads as logged out."""
    from pytest_django.live_server_helper import LiveServer

    server = LiveServer("localhost", start=False)
    server.thread.connections_override = {}  # each request thread opens its own
    server.start()
    try:
        yield server
    finally:
        server.stop()
