"""A tool call's health stamp: on SQLite it rides in its outcome's ledger write (one commit), on
PostgreSQL it is handed to a writer after the outcome and not waited for, skipping a server row
another transaction holds; neither the stamp nor the outcome can cost the other."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from nr_llm import own_transaction, tools
from nr_llm.governance import ledger
from nr_llm.governance.ledger import LedgerUnavailable
from nr_llm.mcp import CallOutcome, Endpoint
from nr_llm.models import McpServer, ToolCallStatus
from nr_llm.servers import health
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


def test_the_stamp_costs_the_call_no_writer_job_of_its_own(monkeypatch):
    """Two ledger writes per call (its row, its outcome), both on the caller's own connection
    (no transaction open), nothing else waited for: on SQLite the stamp in the outcome's
    transaction, no writer job at all; on PostgreSQL one hand-over, for the stamp."""
    tool = guarded_tool(requires_approval=False)
    jobs = _jobs(monkeypatch)
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
    assert not result.is_error, result.text
    assert own_transaction.settle(10)
    assert jobs == ([] if connection.vendor == "sqlite" else ["nr-llm-hand-over"])
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


def test_a_call_with_no_ledger_row_is_not_sent_and_stamps_nothing(monkeypatch):
    """The ledger refused the call's row: the call is not sent, so there is no contact to stamp."""
    tool = guarded_tool(requires_approval=False)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise LedgerUnavailable("the database refused the write (OperationalError)")

    monkeypatch.setattr(ledger, "open_call", refused)
    client = StampingClient()
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=client)
    assert result.is_error and result.call_id is None and client.calls == [], result
    assert own_transaction.settle(10)
    assert _stamped(tool.server) == (None, None)


def test_a_failing_stamp_never_costs_the_outcome(monkeypatch, caplog):
    """A real database error in the stamp (a table that is not there) is logged and contained:
    the outcome is kept (the stamp's savepoint in the outcome's transaction)."""
    tool = guarded_tool(requires_approval=False)

    def broken(self: health.Stamp) -> int:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE nr_llm_no_such_table SET last_latency_ms = %s", [1])
        return 0

    monkeypatch.setattr(health.Stamp, "update", broken)
    with caplog.at_level(logging.WARNING, "nr_llm.health"):
        result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
        assert own_transaction.settle(10)
    assert not result.is_error, result.text
    row = row_of(result)
    assert (row.status, row.error_kind) == (ToolCallStatus.SUCCEEDED, "")
    assert row.result_preview_ciphertext  # the answer was kept in the same write
    assert f"could not record contact with MCP server {tool.server.identifier}" in caplog.text
    assert _stamped(tool.server) == (None, None)


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's caller waits for its stamp: one write lock for all")


def _occupy_every_writer(release: threading.Event) -> list[Any]:
    """Hand every writer thread a job that holds it until ``release``; once all hold."""
    holding = threading.Barrier(own_transaction.WRITERS + 1)

    def occupy() -> None:
        holding.wait(10)
        release.wait(10)

    blockers = [own_transaction.hand_over(occupy) for _ in range(own_transaction.WRITERS)]
    holding.wait(10)
    return blockers


def test_on_postgresql_a_server_row_held_elsewhere_is_skipped_not_waited_for():
    """An operator's transaction holds the server row: the call's outcome is written at once, and
    its stamp, handed to a writer, skips the row (the next operation stamps again)."""
    _postgresql_only()
    tool = guarded_tool(requires_approval=False)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        from django.db import transaction

        try:
            with transaction.atomic():
                McpServer.objects.select_for_update().get(pk=tool.server.pk)
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        result = tools.execute(tool.tool_name, {"text": "hi"}, client=StampingClient())
        assert time.monotonic() - started < 5  # the holder keeps the row for 10 s
        assert row_of(result).status == ToolCallStatus.SUCCEEDED
        assert own_transaction.settle(10)
        assert _stamped(tool.server) == (None, None)
    finally:
        release.set()
        holder.join(10)


def test_on_postgresql_a_servers_waiting_stamps_cost_one_write_and_keep_the_latest(monkeypatch):
    """Stamps of one server handed over while a writer is busy take each other's place: one
    job for them all, which writes the latest contact (not the last one handed over)."""
    _postgresql_only()
    tool = guarded_tool(requires_approval=False)
    identifier = tool.server.identifier
    release = threading.Event()
    blockers = _occupy_every_writer(release)
    jobs = _jobs(monkeypatch)
    try:
        health.write([health.Stamp(identifier, STAMP, 10)])
        health.write([health.Stamp(identifier, STAMP + timedelta(seconds=2), 30)])
        health.write([health.Stamp(identifier, STAMP + timedelta(seconds=1), 20)])  # late, older
    finally:
        release.set()
    for blocker in blockers:
        blocker.result(10)
    assert own_transaction.settle(10)
    assert jobs == ["nr-llm-hand-over"]
    assert _stamped(tool.server) == (STAMP + timedelta(seconds=2), 30)
    # Taken: the server's next stamp is a job of its own again.
    health.write([health.Stamp(identifier, STAMP + timedelta(seconds=3), 40)])
    assert own_transaction.settle(10)
    assert jobs == ["nr-llm-hand-over", "nr-llm-hand-over"]
    assert _stamped(tool.server) == (STAMP + timedelta(seconds=3), 40)
