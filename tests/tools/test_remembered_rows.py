"""A call prepared from a remembered catalogue row (``lookup.remembered``) runs only if the
catalogue still holds that row: the guard in its ledger row's INSERT. An operator's change
reaches the next call as surely as a read would (issue 26: the read was one of a call's three
round trips before and after the network)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import Field
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nr_llm import tools
from nr_llm.governance import ledger, statements
from nr_llm.governance.ledger import NewCall
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from nr_llm.tools import lookup
from tests.factories import McpServerFactory
from tests.fakes import FakeClient
from tests.governance.helpers import BINDINGS, binding, guarded_tool, row_of
from tests.otel import Otel, attributes_of, otel

__all__ = ["otel"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True, params=BINDINGS)
def _binding(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test with Django's cursor, and on PostgreSQL again with the statements prepared."""
    with binding(request.param):
        yield


LATER = datetime(2027, 1, 2, 3, 4, 5, tzinfo=UTC)


def _reads(captured: CaptureQueriesContext) -> list[str]:
    """The catalogue reads among a caller's queries."""
    table = McpTool._meta.db_table
    queries = [query["sql"] for query in captured.captured_queries]
    return [sql for sql in queries if sql.startswith("SELECT") and table in sql]


def _ran(tool: McpTool, client: FakeClient, **arguments: Any) -> tools.ToolResult:
    return tools.execute(tool.tool_name, arguments or {"text": "hi"}, client=client)


def test_a_second_call_reads_no_catalogue_row():
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    with CaptureQueriesContext(connection) as captured:
        result = _ran(tool, client)
    assert not result.is_error, result.text
    assert _reads(captured) == []
    assert len(client.calls) == 2
    assert row_of(result).status == ToolCallStatus.SUCCEEDED


def test_a_tool_disabled_since_is_refused_and_not_sent():
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    McpTool.objects.filter(pk=tool.pk).update(enabled=False)  # no save(), no signal: only the row
    result = _ran(tool, client)
    assert result.is_error and "is disabled" in result.text, result.text
    assert len(client.calls) == 1
    assert row_of(result).error_kind == "disabled"


def test_a_server_that_requires_approval_since_holds_the_call():
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    McpServer.objects.filter(pk=tool.server_id).update(requires_approval=True)
    result = _ran(tool, client)
    assert result.status == "awaiting_approval", result.text
    assert len(client.calls) == 1
    assert row_of(result).status == ToolCallStatus.AWAITING_APPROVAL


def test_a_server_that_no_longer_requires_approval_runs_the_call():
    tool = guarded_tool(requires_approval=True)
    client = FakeClient()
    assert _ran(tool, client).status == "awaiting_approval"
    McpServer.objects.filter(pk=tool.server_id).update(requires_approval=False)
    result = _ran(tool, client)
    assert not result.is_error, result.text
    assert len(client.calls) == 1


def test_a_refusal_on_a_remembered_schema_is_decided_again_on_the_catalogue():
    """Arguments the remembered schema refuses, which the schema as it is now accepts, run."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    widened = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}
    McpTool.objects.filter(pk=tool.pk).update(input_schema=widened)
    result = _ran(tool, client, count=3)
    assert not result.is_error, result.text
    assert client.calls[-1] == ("echo", {"count": 3})


def test_a_ledger_that_cannot_write_is_no_licence_to_run_on_a_remembered_row(monkeypatch, caplog):
    """With the ledger down the call runs as before (it needs no approval, the lost row is
    logged), but only on the row read anew: a tool disabled since is refused, not sent."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    McpTool.objects.filter(pk=tool.pk).update(enabled=False)

    def refused(*args: Any) -> bool:
        raise DatabaseError("the ledger's table is gone")

    monkeypatch.setattr(statements, "insert", refused)
    result = _ran(tool, client)
    assert result.is_error and "is disabled" in result.text, result.text
    assert len(client.calls) == 1


def test_a_stamp_or_an_import_status_costs_no_read_again():
    """Bookkeeping columns are not compared: a call after a health stamp uses what it remembers."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    McpServer.objects.filter(pk=tool.server_id).update(last_contact=LATER, last_latency_ms=7, tool_count=9)
    with CaptureQueriesContext(connection) as captured:
        assert not _ran(tool, client).is_error
    assert _reads(captured) == []


def test_a_remembered_row_is_handed_out_as_a_copy():
    tool = guarded_tool(requires_approval=False)
    lookup.tool_by_name(tool.tool_name)
    found = lookup.remembered(tool.tool_name)
    assert found is not None
    found[0].description = "changed by a caller"
    found[0].server.name = "changed too"
    again = lookup.remembered(tool.tool_name)
    assert again is not None
    assert (again[0].description, again[0].server.name) == ("Echo the text.", "Guarded server")


def test_only_the_most_recently_read_rows_are_remembered(monkeypatch):
    monkeypatch.setattr(lookup, "REMEMBERED", 2)
    tool = guarded_tool(requires_approval=False)
    server = tool.server
    names = [tool.tool_name]
    for index in range(2):
        other = McpTool.objects.create(server=server, tool_name=f"mcp_other_{index}", remote_name="x")
        names.append(other.tool_name)
    for name in names:
        lookup.tool_by_name(name)
    assert [lookup.remembered(name) is not None for name in names] == [False, True, True]


# -- the guard itself: every column a call reads is compared, the bookkeeping is not ----------


def _changed(field: Field[Any, Any], value: Any, other_server: McpServer) -> Any:
    """A different value of ``field``'s kind, valid for its column."""
    kind = field.get_internal_type()
    if field.name == "server":
        return other_server.pk
    if kind == "BooleanField":
        return not value
    if kind == "JSONField":
        return {"changed": [1, None, "x"]}
    if kind == "DateTimeField":
        return LATER if value != LATER else timezone.now()
    if kind in ("PositiveIntegerField", "PositiveSmallIntegerField", "IntegerField"):
        return (value or 0) + 1
    if kind in ("CharField", "TextField"):
        changed = "y" if value == "x" else "x"
        return changed if field.max_length is None or field.max_length >= 1 else value
    raise AssertionError(f"no other value known for {field.name} ({kind})")


def _guard_holds(tool: McpTool) -> bool:
    """Whether a ledger row guarded by the remembered ``tool`` would be written now."""
    found = lookup.remembered(tool.tool_name)
    assert found is not None
    _, guard = found
    row = ToolCall(created=LATER, tool_name=tool.tool_name, status=ToolCallStatus.RUNNING, id=uuid.uuid4())
    return statements.insert(row, guard)


def _columns(model: type[McpTool] | type[McpServer]) -> list[Field[Any, Any]]:
    return [field for field in model._meta.concrete_fields if not field.primary_key]


@pytest.mark.parametrize("name", [field.name for field in _columns(McpTool)])
def test_the_guard_compares_each_column_of_the_tool_a_call_reads(name):
    tool = guarded_tool(requires_approval=False)
    other = McpServerFactory.create(identifier="other")
    field = McpTool._meta.get_field(name)
    assert isinstance(field, Field)
    lookup.tool_by_name(tool.tool_name)
    assert _guard_holds(tool)
    value = _changed(field, getattr(tool, field.attname), other)
    McpTool.objects.filter(pk=tool.pk).update(**{field.attname: value})
    expected = name in lookup._UNGUARDED[McpTool]
    assert _guard_holds(tool) is expected


@pytest.mark.parametrize("name", [field.name for field in _columns(McpServer)])
def test_the_guard_compares_each_column_of_the_server_a_call_reads(name):
    tool = guarded_tool(requires_approval=False)
    field = McpServer._meta.get_field(name)
    assert isinstance(field, Field)
    lookup.tool_by_name(tool.tool_name)
    assert _guard_holds(tool)
    server = McpServer.objects.get(pk=tool.server_id)
    value = _changed(field, getattr(server, field.attname), server)
    if name == "identifier":
        value = "changed"
    McpServer.objects.filter(pk=server.pk).update(**{field.attname: value})
    expected = name in lookup._UNGUARDED[McpServer]
    assert _guard_holds(tool) is expected


def test_a_guard_that_fails_writes_nothing():
    tool = guarded_tool(requires_approval=False)
    lookup.tool_by_name(tool.tool_name)
    McpTool.objects.filter(pk=tool.pk).update(description="changed")
    before = ToolCall.objects.count()
    assert not _guard_holds(tool)
    assert ToolCall.objects.count() == before


def test_a_guarded_row_is_the_row_an_unguarded_insert_writes():
    """The guarded INSERT ... SELECT casts what PostgreSQL would read as text: every column of
    a full row comes back as it was given."""
    tool = guarded_tool(requires_approval=False)
    lookup.tool_by_name(tool.tool_name)
    found = lookup.remembered(tool.tool_name)
    assert found is not None
    now = timezone.now()
    actor = {"actor_user_id": None, "actor_label": "a"}
    call = NewCall(tool.tool_name, '{"text":"hi"}', actor, found[0], "public")
    guard = found[1]
    guarded = ledger.open_call(call, ToolCallStatus.AWAITING_APPROVAL, now, guard=guard)
    plain = ledger.open_call(call, ToolCallStatus.AWAITING_APPROVAL, now)
    skip = {"id", "arguments_ciphertext"}  # a fresh key and a fresh nonce each
    values = ToolCall.objects.filter(pk__in=[guarded, plain]).values()
    first, second = ({k: v for k, v in row.items() if k not in skip} for row in values)
    assert first == second
    assert first["expires_at"] is not None and first["tool_input_schema"] == tool.input_schema


# -- found in review: a retry never doubles a row, a transaction's own changes count -----------


def _commits_then_reports_a_failure_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger's first write is done, but its caller hears a failure (a lost answer)."""
    real = ledger.write
    failed: list[bool] = []

    def flaky(work: Any, *, durable: bool = True) -> Any:
        done = real(work, durable=durable)
        if not failed:
            failed.append(True)
            raise ledger.LedgerUnavailable("the database's answer was lost")
        return done

    monkeypatch.setattr(ledger, "write", flaky)


def test_a_write_done_but_reported_failed_leaves_one_held_row_not_two(monkeypatch):
    """The call starts again from a row read anew with the same row key: the second INSERT
    meets the first instead of adding a second approvable row for one model call."""
    tool = guarded_tool(requires_approval=True)
    client = FakeClient()
    assert _ran(tool, client).status == "awaiting_approval"
    _commits_then_reports_a_failure_once(monkeypatch)
    result = _ran(tool, client)
    assert result.is_error and "not run" in result.text, result.text
    assert ToolCall.objects.filter(status=ToolCallStatus.AWAITING_APPROVAL).count() == 2  # one per call
    assert client.calls == []


def test_a_write_done_but_reported_failed_leaves_one_row_for_a_call_that_runs(monkeypatch):
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    _commits_then_reports_a_failure_once(monkeypatch)
    before = ToolCall.objects.count()
    result = _ran(tool, client)
    assert not result.is_error, result.text
    assert ToolCall.objects.count() == before + 1
    assert len(client.calls) == 2


def test_a_callers_own_uncommitted_change_reaches_its_call():
    """Inside a transaction the row is read in it: the guard, on another connection, would see
    only what is committed."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    with transaction.atomic():
        McpServer.objects.filter(pk=tool.server_id).update(requires_approval=True)
        result = _ran(tool, client)
    assert len(client.calls) == 1, result.text
    if connection.vendor == "postgresql":  # SQLite cannot write beside the transaction: not run
        assert result.status == "awaiting_approval", result.text


def test_a_remembered_row_shows_no_ciphertext_in_a_repr():
    tool = guarded_tool(requires_approval=False)
    server = McpServer.objects.get(pk=tool.server_id)
    server.set_credential("a-secret-of-this-site")
    server.save()
    lookup.tool_by_name(tool.tool_name)
    found = lookup.remembered(tool.tool_name)
    assert found is not None
    shown = repr(found[1]) + repr(found[1].values) + repr((found[1].sql, found[1].values))
    assert server.credential_ciphertext not in shown
    assert server.credential_ciphertext[-20:] not in shown


def test_a_call_read_anew_tells_its_trace_only_what_the_catalogue_says(otel: Otel):
    """A tool removed since it was remembered: its span names no server, no data class (the
    remembered ones were said first, then forgotten), as for any unknown tool."""
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    assert not _ran(tool, client).is_error
    McpTool.objects.filter(pk=tool.pk).delete()
    otel.exporter.clear()
    result = _ran(tool, client)
    assert result.is_error and "unknown tool" in result.text, result.text
    (span,) = otel.named(f"execute_tool {tool.tool_name}")
    attributes = attributes_of(span)
    assert "nr_llm.server" not in attributes and "nr_llm.data_class" not in attributes, attributes
    assert attributes["nr_llm.tool_call.status"] == "failed"
