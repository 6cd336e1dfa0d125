"""Fixtures shared by every test folder (registered here once, so a session fixture starts once)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nr_llm.mcp.eras import process_cache
from tests.oauth_peers import oauth_peers
from tests.tls import tls

__all__ = ["oauth_peers", "tls"]


@pytest.fixture(autouse=True)
def _no_ledger_rows_of_earlier_tests(request: pytest.FixtureRequest) -> None:
    """On PostgreSQL the tool-call ledger commits beside a test's own transaction (that is its
    point), so a test that does not flush would leave its rows to the next: delete them first."""
    if request.node.get_closest_marker("django_db") is None:
        return
    request.getfixturevalue("django_db_setup")
    from django.db import connection

    if connection.vendor != "postgresql":
        return  # SQLite cannot write beside the test's transaction: nothing was committed
    from nr_llm.models import ToolCall
    from nr_llm.own_transaction import run_in_own_transaction

    with request.getfixturevalue("django_db_blocker").unblock():
        run_in_own_transaction(lambda: ToolCall.objects.all().delete())


@pytest.fixture(autouse=True)
def _forget_protocol_eras() -> Iterator[None]:
    """The process-wide era cache starts empty in each test: an OS-chosen port reused by a
    server of the other era must not inherit a verdict from an earlier test."""
    process_cache().clear()
    yield
    process_cache().clear()
