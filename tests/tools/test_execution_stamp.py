"""A tool call's health stamp rides in its outcome's ledger write: one writer job, not two, and
neither can cost the other (issue 26: "the ledger costs almost nothing")."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from nr_llm import own_transaction, tools
from nr_llm.governance import ledger, statements
from nr_llm.governance.ledger import LedgerUnavailable
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.models import McpServer, ToolCallStatus
from nr_llm.servers.health import HealthRecorder
from tests.fakes import FakeClient
from tests.governance.helpers import guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)
STAMP = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


class StampingClient(FakeClient):
    """A fake server that, as McpClient does, stamps contact after each answered call."""

    health = HealthRecorder(now=lambda: STAMP)

    def call_tool(self, endpoint: Endpoint, name: str, *args: Any, **kwargs: Any) -> CallOutcome:
        outcome = super().call_tool(endpoint, name, *args, **kwargs)
        self.health.record_contact(endpoint, 42)
        return outcome


def _jobs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the jobs handed to the writer threads from now on."""
    names: list[str] = []
    real = own_transaction._writers.submit

    def counted(work: Any, name: str = "") -> Any:
        names.append(name)
        return real(work, name) if name else real(work)

    monkeypatch.setattr(own_transaction._writers, "submit", counted)
    return names


def _stamped(server: McpServer) -> tuple[object, object]:
    fresh = McpServer.objects.get(pk=server.pk)
    return fresh.last_contact, fresh.last_latency_ms


def test_the_stamp_is_written_with_the_outcome_in_one_job(monkeypatch):
    """Two ledger writes per call (its row, its outcome with the stamp), nothing handed over
    besides: on SQLite two writer jobs; on PostgreSQL none at all, a caller outside any
    transaction writing both on its own connection. The stamp is there when execute() returns,
    without waiting for anything."""
    tool = guarded_tool(requires_approval=False)
    jobs = _jobs(monkeypatch)
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert not result.is_error, result.text
    assert jobs == ([] if connection.vendor == "postgresql" else ["nr-llm-ledger", "nr-llm-ledger"])
    assert _stamped(tool.server) == (STAMP, 42)
    assert row_of(result).status == ToolCallStatus.SUCCEEDED


def test_a_call_whose_outcome_cannot_be_written_still_stamps(monkeypatch, caplog):
    """The contact happened: a ledger that refuses the outcome does not lose the stamp."""
    tool = guarded_tool(requires_approval=False)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise LedgerUnavailable("the database refused the write (OperationalError)")

    monkeypatch.setattr(ledger, "finish", refused)
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert not result.is_error, result.text
    assert "was not recorded" in caplog.text
    assert own_transaction.settle(10)
    assert _stamped(tool.server) == (STAMP, 42)


def test_a_call_with_no_ledger_row_still_stamps(monkeypatch):
    """No row to ride in (the ledger refused the call's row): the stamp is written on its own."""
    tool = guarded_tool(requires_approval=False)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise LedgerUnavailable("the database refused the write (OperationalError)")

    monkeypatch.setattr(ledger, "open_call", refused)
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert not result.is_error and result.call_id is None, result
    assert own_transaction.settle(10)
    assert _stamped(tool.server) == (STAMP, 42)


def test_a_failing_stamp_never_costs_the_outcome(monkeypatch, caplog):
    """A real database error in the stamp (a table that is not there) is logged and contained:
    the outcome in the same write is kept, on PostgreSQL (the shared statement fails whole, so
    the outcome is written alone) as on SQLite (the stamp's savepoint)."""
    tool = guarded_tool(requires_approval=False)
    real = statements.Update.sql

    def broken(self: statements.Update) -> tuple[str, list[Any]]:
        if self.model is McpServer:
            return "UPDATE nr_llm_no_such_table SET last_latency_ms = %s", [1]
        return real(self)

    monkeypatch.setattr(statements.Update, "sql", broken)
    with caplog.at_level(logging.WARNING, "nr_llm.health"):
        result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert not result.is_error, result.text
    row = row_of(result)
    assert (row.status, row.error_kind) == (ToolCallStatus.SUCCEEDED, "")
    assert row.result_preview_ciphertext  # the answer was kept in the same write
    assert f"could not record contact with MCP server {tool.server.identifier}" in caplog.text
    assert _stamped(tool.server) == (None, None)


def test_on_postgresql_the_stamp_rides_in_the_outcomes_statement(monkeypatch):
    """One statement carries the outcome and the stamp (one round trip for both)."""
    if connection.vendor != "postgresql":
        pytest.skip("a data-modifying WITH is PostgreSQL's")
    tool = guarded_tool(requires_approval=False)
    sent: list[str] = []
    real = statements.run

    def counted(update: statements.Update, riders: Any = ()) -> int:
        sent.append(update.model.__name__ + "".join(f"+{rider.model.__name__}" for rider in riders))
        return real(update, riders)

    monkeypatch.setattr(statements, "run", counted)
    tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert sent == ["ToolCall+McpServer"]
    assert _stamped(tool.server) == (STAMP, 42)
