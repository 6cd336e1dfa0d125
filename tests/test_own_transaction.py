"""run_in_own_transaction: work committed apart from the caller's transaction."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from nr_llm.models import McpServer
from nr_llm.own_transaction import caller_blocks_own_transaction, run_in_own_transaction

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_work_commits_even_when_the_caller_rolls_back():
    """PostgreSQL: what the work wrote stays after the caller's rollback."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer: see the next test")
    with pytest.raises(RuntimeError), transaction.atomic():
        run_in_own_transaction(lambda: McpServer.objects.create(identifier="kept", name="Kept"))
        raise RuntimeError("the caller fails afterwards")
    assert McpServer.objects.filter(identifier="kept").exists()


def test_on_sqlite_a_caller_inside_a_transaction_is_told_before_trying():
    """The one case another connection cannot write beside the caller is named, not waited on."""
    assert caller_blocks_own_transaction() is False
    with transaction.atomic():
        assert caller_blocks_own_transaction() is (connection.vendor == "sqlite")


def test_the_works_exception_is_raised_in_the_caller_and_nothing_is_kept():
    """A failing work rolls its own transaction back and raises where it was called."""

    def fail() -> None:
        McpServer.objects.create(identifier="gone", name="Gone")
        raise LookupError("the work failed")

    with pytest.raises(LookupError, match="the work failed"):
        run_in_own_transaction(fail)
    assert not McpServer.objects.filter(identifier="gone").exists()
