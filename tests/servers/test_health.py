"""HealthRecorder: one UPDATE of two columns per successful operation; a failing write is swallowed;
off the caller's connection when it has no transaction, and never waiting on a row lock."""

import contextlib
import logging
import threading
from datetime import UTC, datetime

import pytest
from django.db import DatabaseError, connection, transaction
from django.test.utils import CaptureQueriesContext

from nr_llm.mcp import McpTransportError
from nr_llm.models import ImportStatus, McpServer
from nr_llm.own_transaction import settle
from nr_llm.servers.endpoints import endpoint_for, mcp_client
from nr_llm.servers.health import HealthRecorder

from ..factories import McpServerFactory
from ..peers import sdk_server

pytestmark = pytest.mark.django_db
STAMP = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


def _updates(captured: CaptureQueriesContext) -> list[str]:
    return [query["sql"] for query in captured.captured_queries if query["sql"].startswith("UPDATE")]


def test_contact_is_one_update_of_exactly_two_columns():
    """The stamp is a single UPDATE setting last_contact and last_latency_ms and nothing else."""
    server = McpServerFactory.create()
    with CaptureQueriesContext(connection) as captured:
        HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), 42)
    updates = _updates(captured)
    assert len(updates) == 1
    set_clause = updates[0].split(" SET ", 1)[1].split(" WHERE ", 1)[0]
    assert sorted(part.split(" = ")[0].strip('"`') for part in set_clause.split(", ")) == [
        "last_contact",
        "last_latency_ms",
    ]


def test_contact_stamps_the_clock_and_latency_and_leaves_the_row_alone():
    """last_contact is the clock's time, latency is stored; updated and import state do not move."""
    server = McpServerFactory.create(import_status=ImportStatus.ERROR, import_error="refused: no data class")
    before = McpServer.objects.get(pk=server.pk)
    other = McpServerFactory.create()

    HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), 42)

    after = McpServer.objects.get(pk=server.pk)
    assert after.last_contact == STAMP
    assert after.last_latency_ms == 42
    assert after.updated == before.updated
    assert (after.import_status, after.import_error) == (ImportStatus.ERROR, "refused: no data class")
    other.refresh_from_db()
    assert (other.last_contact, other.last_latency_ms) == (None, None)


def test_a_negative_latency_is_stored_as_zero():
    """A latency from a stepped clock never becomes a negative number in a positive column."""
    server = McpServerFactory.create()
    HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), -5)
    server.refresh_from_db()
    assert server.last_latency_ms == 0


def _refuse_health_updates(execute, sql, params, many, context):
    if sql.startswith("UPDATE") and "last_contact" in sql:
        raise DatabaseError("disk full (simulated by the test)")
    return execute(sql, params, many, context)


def test_a_write_that_raises_is_logged_as_a_warning_and_swallowed(caplog):
    """A failing stamp does not raise to the caller; a warning names the server."""
    server = McpServerFactory.create(identifier="flaky")
    with connection.execute_wrapper(_refuse_health_updates):
        HealthRecorder().record_contact(endpoint_for(server), 42)
    warnings = [r for r in caplog.records if r.name == "nr_llm.health"]
    assert [(r.levelno, r.getMessage()) for r in warnings] == [
        (logging.WARNING, "could not record contact with MCP server flaky")
    ]
    assert warnings[0].exc_info is not None
    server.refresh_from_db()
    assert server.last_contact is None


def _break_health_updates(execute, sql, params, many, context):
    # A real error from the database itself: the statement names a table that does not exist.
    if sql.startswith("UPDATE") and "last_contact" in sql:
        sql = sql.replace("nr_llm_mcpserver", "nr_llm_no_such_table")
    return execute(sql, params, many, context)


def test_a_failed_write_leaves_the_callers_transaction_usable(caplog):
    """A database error in the stamp is contained in a savepoint: the caller's transaction goes on."""
    server = McpServerFactory.create()
    with connection.execute_wrapper(_break_health_updates):
        HealthRecorder().record_contact(endpoint_for(server), 42)
    assert "could not record contact" in caplog.text
    # On PostgreSQL an error without a savepoint aborts the transaction and this query fails.
    McpServer.objects.filter(pk=server.pk).update(name="still writable")
    assert McpServer.objects.get(pk=server.pk).name == "still writable"


@pytest.mark.e2e
def test_a_tool_call_returns_its_answer_when_the_stamp_cannot_be_written(settings, caplog):
    """Against a real MCP server: the health write raises, the tool call still answers."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="peer", url=url)
        with connection.execute_wrapper(_refuse_health_updates):
            outcome = mcp_client().call_tool(endpoint_for(server), "echo", {"text": "still here"})
    assert (outcome.text, outcome.is_error) == ("still here", False)
    assert "could not record contact with MCP server peer" in caplog.text
    server.refresh_from_db()
    assert server.last_contact is None


@pytest.mark.e2e
def test_a_successful_call_stamps_and_a_failed_one_does_not(settings):
    """A real call stamps contact; a call to a server that is gone raises and leaves no stamp."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(url=url)
        mcp_client().call_tool(endpoint_for(server), "echo", {"text": "hi"})
    server.refresh_from_db()
    stamped = (server.last_contact, server.last_latency_ms)
    assert stamped[0] is not None and stamped[1] is not None
    # The peer has stopped: the same call now fails, and the stamp stays as it was.
    with pytest.raises(McpTransportError):
        mcp_client().call_tool(endpoint_for(server), "echo", {"text": "hi"})
    server.refresh_from_db()
    assert (server.last_contact, server.last_latency_ms) == stamped


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_stamp_is_off_the_callers_connection():
    """A caller with no transaction of its own sends nothing for the stamp on its connection
    and does not wait for it; the writer commits it."""
    server = McpServerFactory.create()
    with CaptureQueriesContext(connection) as captured:
        HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), 42)
    assert captured.captured_queries == []
    assert settle(10)
    server.refresh_from_db()
    assert (server.last_contact, server.last_latency_ms) == (STAMP, 42)


def _hold_row_lock(identifier: str, locked: threading.Event, release: threading.Event) -> threading.Thread:
    """Another request's transaction holding the server row (an operator's save in progress)."""

    def hold() -> None:
        try:
            with transaction.atomic():
                list(McpServer.objects.select_for_update().filter(identifier=identifier))
                locked.set()
                release.wait(20)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert locked.wait(10)
    return thread


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("in_transaction", [False, True])
def test_the_stamp_never_waits_on_another_requests_row_lock(in_transaction):
    """PostgreSQL: while another transaction holds the server row, a stamp (from a caller in a
    transaction or not) returns at once and skips the row; the next one stamps."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks are PostgreSQL's")
    server = McpServerFactory.create(identifier="held")
    locked, release = threading.Event(), threading.Event()
    holder = _hold_row_lock("held", locked, release)
    try:
        with transaction.atomic() if in_transaction else contextlib.nullcontext():
            HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), 42)
        assert settle(5)  # the writer did not wait either: the row stays held for 20 s
        server.refresh_from_db()
        assert server.last_contact is None
    finally:
        release.set()
        holder.join(10)
    HealthRecorder(now=lambda: STAMP).record_contact(endpoint_for(server), 7)
    assert settle(10)
    stamped = McpServer.objects.get(pk=server.pk)
    assert (stamped.last_contact, stamped.last_latency_ms) == (STAMP, 7)


@pytest.mark.django_db(transaction=True)
def test_a_handed_over_stamp_is_one_statement_in_autocommit_on_postgresql(monkeypatch):
    """PostgreSQL: the writer runs a call's stamp as one UPDATE in autocommit (it skips a held
    row itself), not BEGIN, SAVEPOINT, UPDATE, RELEASE and COMMIT beside the caller's next call."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's caller waits for its stamp in one transaction")
    from nr_llm.own_transaction import hand_over
    from nr_llm.servers import health

    server = McpServerFactory.create()
    seen: list[tuple[str, bool]] = []

    def spy(execute, sql, params, many, context):
        seen.append((sql.split()[0], connection.get_autocommit()))
        return execute(sql, params, many, context)

    def watched(work, **options):
        def run() -> object:
            with connection.execute_wrapper(spy):
                return work()

        return hand_over(run, **options)

    monkeypatch.setattr(health, "hand_over", watched)
    health.write([health.Stamp(server.identifier, STAMP, 9)])
    assert settle(10)
    assert seen == [("UPDATE", True)]
    server.refresh_from_db()
    assert (server.last_contact, server.last_latency_ms) == (STAMP, 9)
