"""On PostgreSQL a tool call's statements are prepared once per connection where the site allows
prepared statements (``OPTIONS["prepare_threshold"]``), and never where it does not (Django's
default: a transaction-pooling PgBouncer cannot keep them)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nr_llm import tools
from nr_llm.models import McpTool, ToolCall, ToolCallStatus
from tests.fakes import FakeClient

from .helpers import binding, guarded_tool, row_of

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="prepared statements are PostgreSQL's (SQLite caches its own)",
    ),
]


def _prepared() -> list[str]:
    """The statements this connection's session holds prepared."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")
        return [row[0] for row in cursor.fetchall()]


def _ours(statements: list[str]) -> list[str]:
    tables = (ToolCall._meta.db_table, McpTool._meta.db_table)
    return [sql for sql in statements if any(f'"{table}"' in sql for table in tables)]


def _calls(tool: McpTool, count: int) -> None:
    client = FakeClient()
    for _ in range(count):
        result = tools.execute(tool.tool_name, {"text": "hi"}, client=client)
        assert not result.is_error, result.text
        assert row_of(result).status == ToolCallStatus.SUCCEEDED


def test_a_calls_statements_are_prepared_once_where_the_site_allows_it():
    """The catalogue read, both INSERTs (a first call's, and the guarded one of a call on a
    remembered row) and the outcome's UPDATE; further calls prepare nothing more."""
    tool = guarded_tool(requires_approval=False)
    with binding("prepared"):
        _calls(tool, 2)
        prepared = _ours(_prepared())
        assert [sql.split(" ", 1)[0] for sql in prepared] == ["SELECT", "INSERT", "UPDATE", "INSERT"]
        assert " WHERE " in prepared[3] and " WHERE " not in prepared[1], prepared  # the guard
        _calls(tool, 3)
        assert _ours(_prepared()) == prepared


def test_djangos_default_prepares_nothing():
    tool = guarded_tool(requires_approval=False)
    _calls(tool, 3)
    assert _ours(_prepared()) == []


def test_while_django_logs_queries_its_log_reads_each_statement_and_nothing_is_prepared():
    """``assertNumQueries``, ``DEBUG``: the log needs the text a client-binding cursor sends."""
    tool = guarded_tool(requires_approval=False)
    with binding("prepared"), CaptureQueriesContext(connection) as captured:
        _calls(tool, 2)
    logged = [query["sql"] for query in captured.captured_queries]
    assert all(sql for sql in logged), logged
    assert sum(sql.startswith(f'INSERT INTO "{ToolCall._meta.db_table}"') for sql in logged) == 2
    assert _ours(_prepared()) == []
