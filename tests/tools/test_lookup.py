"""tool_by_name and tools_by_names: the catalogue rows execute() and a turn read, built once per
database, sent through Django's cursor, equal to the ORM's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django.test.utils import CaptureQueriesContext

from nr_llm.models import ImportStatus, McpServer, McpTool
from nr_llm.servers import credentials
from nr_llm.tools.lookup import tool_by_name, tools_by_names

from ..factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db
WHEN = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _values(row: Model) -> dict[str, Any]:
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


def _full_tool() -> McpTool:
    """A row with every kind of column set: JSON, booleans, datetimes, nulls, text with quotes."""
    server = McpServerFactory.create(
        identifier="full",
        name="Server \"with\" 'quotes'",
        credential_ciphertext=credentials.encrypt("a-secret"),
        import_status=ImportStatus.ERROR,
        import_error="refused",
        last_contact=WHEN,
        last_latency_ms=12,
        operation_timeout=7.5,
        max_concurrent_calls=3,
        run_writes_alone=True,
        requires_approval=True,
    )
    schema = {"type": "object", "properties": {"q": {"type": ["string", "null"], "enum": ["a", None]}}}
    return McpToolFactory.create(
        server=server,
        remote_name="search",
        title="Search ☃",
        input_schema=schema,
        output_schema={"type": "object"},
        remote_annotations={"readOnlyHint": True},
        raw_definition={"name": "search", "inputSchema": schema},
        pinned_definition={"inputSchema": schema},
        enabled=True,
        run_alone=True,
        orphaned=True,
        orphaned_at=WHEN,
        disabled_reason="",
    )


def test_the_row_and_its_server_equal_the_orms_read():
    """Every concrete field of the tool and of its server has the value, and the type, the ORM
    gives: decoded JSON, aware datetimes, booleans, floats, nulls."""
    tool = _full_tool()
    expected = McpTool.objects.select_related("server").get(tool_name=tool.tool_name)
    found = tool_by_name(tool.tool_name)
    assert found is not None
    assert _values(found) == _values(expected)
    assert _values(found.server) == _values(expected.server)
    for ours, theirs in ((found, expected), (found.server, expected.server)):
        for name, value in _values(theirs).items():
            assert type(getattr(ours, name)) is type(value), name
    assert found.server.last_contact == WHEN and found.orphaned_at == WHEN
    assert found._state.adding is False and found._state.db == "default"


def test_one_query_reaches_the_tool_and_its_server():
    """The server is attached: reading it sends nothing more."""
    tool = McpToolFactory.create()
    with CaptureQueriesContext(connection) as captured:
        found = tool_by_name(tool.tool_name)
        assert found is not None
        assert found.server.identifier == tool.server.identifier
        assert found.server.resolve_credential() is None
    assert len(captured.captured_queries) == 1


@pytest.mark.parametrize("name", ["mcp_nothing", "x' OR '1'='1", "", "%", "mcp_server_tool%"])
def test_an_unknown_name_is_none_and_the_name_is_a_value_not_sql(name):
    """A model's made-up name is a parameter: no row, no error, whatever it holds."""
    McpToolFactory.create()
    assert tool_by_name(name) is None


def test_a_saved_row_is_what_the_next_read_sees():
    """Nothing is cached but the statement: an operator's change is read by the next call."""
    tool = McpToolFactory.create(enabled=True)
    assert tool_by_name(tool.tool_name).enabled is True  # type: ignore[union-attr]
    McpTool.objects.filter(pk=tool.pk).update(enabled=False)
    McpServer.objects.filter(pk=tool.server.pk).update(name="Renamed")
    found = tool_by_name(tool.tool_name)
    assert found is not None and found.enabled is False and found.server.name == "Renamed"


def test_a_turns_rows_come_in_one_query_equal_to_the_orms():
    """A turn's names in one statement: each row found is the ORM's, server attached; a name
    with no row (or one that is SQL) is simply absent."""
    full = _full_tool()
    other = McpToolFactory.create()
    names = {full.tool_name, other.tool_name, "mcp_nothing", "x' OR '1'='1"}
    with CaptureQueriesContext(connection) as captured:
        found = tools_by_names(names)
        servers = {name: row.server.identifier for name, row in found.items()}
    assert len(captured.captured_queries) == 1
    assert set(found) == {full.tool_name, other.tool_name}
    assert servers == {full.tool_name: full.server.identifier, other.tool_name: other.server.identifier}
    for name, row in found.items():
        expected = McpTool.objects.select_related("server").get(tool_name=name)
        assert _values(row) == _values(expected)
        assert _values(row.server) == _values(expected.server)


def test_no_names_send_no_query():
    with CaptureQueriesContext(connection) as captured:
        assert tools_by_names(set()) == {}
    assert captured.captured_queries == []
