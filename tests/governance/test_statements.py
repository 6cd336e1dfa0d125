"""statements: the tool-call path's INSERT and UPDATE, built once, write what the ORM writes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import Model
from django.test.utils import CaptureQueriesContext

from nr_llm.governance import statements
from nr_llm.models import McpServer, ToolCall, ToolCallStatus

from ..factories import McpServerFactory, McpToolFactory
from .helpers import BINDINGS, binding

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, params=BINDINGS)
def _binding(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test with Django's cursor, and on PostgreSQL again with the statements prepared."""
    with binding(request.param):
        yield


WHEN = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def _values(row: Model) -> dict[str, Any]:
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


def _call(**fields: Any) -> ToolCall:
    tool = McpToolFactory.create()
    return ToolCall(
        created=WHEN,
        tool_name=tool.tool_name,
        tool_id=tool.pk,
        server_id=tool.server.pk,
        server_identifier=tool.server.identifier,
        remote_name=tool.remote_name,
        tool_description="Say 'hi' \"twice\"; DROP TABLE x; -- ☃",
        tool_input_schema={"type": "object", "properties": {"a": {"enum": [1, None, "x"]}}},
        status=ToolCallStatus.RUNNING,
        started_at=WHEN,
        actor_label="alice",
        **fields,
    )


def test_an_inserted_row_reads_back_as_the_orms_save_would_write_it():
    """Every column round-trips: UUID key, JSON, text with quotes, nulls, aware datetimes."""
    ours, theirs = _call(), _call(id=uuid.uuid4())
    statements.insert(ours)
    theirs.save(force_insert=True)
    assert ours._state.adding is False
    for row in (ours, theirs):
        stored = _values(ToolCall.objects.get(pk=row.pk))
        assert stored == _values(row)


def test_an_insert_is_one_statement_and_a_duplicate_key_is_refused():
    """One INSERT; the primary key is the database's to enforce, as it is for save()."""
    row = _call()
    with CaptureQueriesContext(connection) as captured:
        statements.insert(row)
    assert [q["sql"].split(" ", 1)[0] for q in captured.captured_queries] == ["INSERT"]
    with pytest.raises(IntegrityError), transaction.atomic():
        statements.insert(row)


def test_an_update_changes_only_the_matching_rows_and_counts_them():
    """Matched on every ``where`` field; a row whose status moved on is not touched (0 rows)."""
    running, other = _call(), _call()
    for row in (running, other):
        statements.insert(row)
    changes = {"status": ToolCallStatus.SUCCEEDED, "duration_ms": 5, "finished_at": WHEN, "era": "modern"}
    where = {"id": running.pk, "status": ToolCallStatus.RUNNING}
    assert statements.run(statements.Update(ToolCall, changes, where)) == 1
    assert statements.run(statements.Update(ToolCall, {"status": ToolCallStatus.FAILED}, where)) == 0
    ended = ToolCall.objects.get(pk=running.pk)
    assert (ended.status, ended.duration_ms, ended.finished_at, ended.era) == (
        ToolCallStatus.SUCCEEDED,
        5,
        WHEN,
        "modern",
    )
    assert ToolCall.objects.get(pk=other.pk).status == ToolCallStatus.RUNNING


def test_an_update_leaves_auto_now_alone_as_queryset_update_does():
    """The server's ``updated`` (auto_now) keeps its value: a stamp is not an edit."""
    server = McpServerFactory.create()
    before = McpServer.objects.get(pk=server.pk).updated
    changes = {"last_contact": WHEN, "last_latency_ms": 9}
    assert statements.run(statements.Update(McpServer, changes, {"identifier": server.identifier})) == 1
    after = McpServer.objects.get(pk=server.pk)
    assert (after.updated, after.last_contact, after.last_latency_ms) == (before, WHEN, 9)
