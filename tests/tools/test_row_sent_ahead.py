"""On PostgreSQL a running call's ledger row is sent ahead of its request (``governance.ahead``):
the INSERT goes out at once, its answer is read where the request would be written, and the
contracts stay as they were: the row is committed before any byte of the call reaches its server,
a guard that fails stops the request unwritten, a refused write is what it was. Against the
official SDK server, observed from another connection (what is committed, not what this
connection would read first)."""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from nr_llm import tools
from nr_llm.governance import ahead, ledger, statements
from nr_llm.governance.ledger import LedgerUnavailable, NewCall
from nr_llm.mcp.protocol.telemetry import DURATION_METRIC
from nr_llm.mcp.wire import watchdog
from nr_llm.models import McpTool, ToolCall, ToolCallStatus
from tests import catalogue_peers
from tests.catalogue_peers import imported_demo
from tests.governance.helpers import guarded_tool, row_of
from tests.otel import Otel, attributes_of, otel

__all__ = ["otel"]

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="sent ahead on PostgreSQL only (SQLite runs in-process)"
    ),
]

stateless_url = catalogue_peers.stateless_url
loopback_allowed = catalogue_peers.loopback_allowed


@pytest.fixture
def echo(stateless_url: str, loopback_allowed: None) -> str:
    imported_demo(stateless_url, "echo")
    return "mcp_demo_echo"


def _committed() -> list[str]:
    """The ledger's statuses as another connection sees them (only what is committed)."""
    seen: list[str] = []

    def look() -> None:
        try:
            seen.extend(ToolCall.objects.order_by("created").values_list("status", flat=True))
        finally:
            connections.close_all()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    return seen


def _tool_calls_written(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """For each tools/call request as its bytes go to the socket: the ledger as committed then."""
    seen: list[list[str]] = []
    real = watchdog._Watched.send

    def send(self: Any, data: Any) -> None:
        if isinstance(data, bytes | bytearray) and b'"tools/call"' in data:
            seen.append(_committed())
        real(self, data)

    monkeypatch.setattr(watchdog._Watched, "send", send)
    return seen


def _sent_ahead(monkeypatch: pytest.MonkeyPatch) -> list[ahead.Sent | None]:
    sent: list[ahead.Sent | None] = []
    real = ahead.send

    def spy(*args: Any, **kwargs: Any) -> ahead.Sent | None:
        sent.append(real(*args, **kwargs))
        return sent[-1]

    monkeypatch.setattr(ahead, "send", spy)
    return sent


def test_the_row_is_committed_before_the_request_however_long_the_insert_takes(echo, monkeypatch):
    """The INSERT sent ahead waits 300 ms in the database (another transaction holds its key,
    then rolls back): the request waits for its answer, so its row is committed before any byte
    of the call is written."""
    sent = _sent_ahead(monkeypatch)
    written = _tool_calls_written(monkeypatch)
    real = ahead.send

    def contended(row: Any, guard: Any = None) -> ahead.Sent | None:
        held = threading.Event()
        threading.Thread(target=_hold_key, args=(copy.copy(row), held), daemon=True).start()
        assert held.wait(10)
        return real(row, guard)

    monkeypatch.setattr(ahead, "send", contended)
    result = tools.execute(echo, {"text": "hi"})
    assert (result.text, result.is_error) == ("hi", False)
    assert len(sent) == 1 and sent[0] is not None
    assert written == [[ToolCallStatus.RUNNING]]
    assert row_of(result).status == ToolCallStatus.SUCCEEDED


def _hold_key(row: ToolCall, held: threading.Event) -> None:
    """Insert ``row`` in a transaction kept open 300 ms, then roll it back: an INSERT of the same
    key waits that long on the unique index, then goes through."""
    try:
        with transaction.atomic():
            statements.insert(row)
            held.set()
            time.sleep(0.3)
            transaction.set_rollback(True)
    finally:
        connections.close_all()


def test_a_remembered_row_changed_meanwhile_stops_the_request_unwritten(echo, monkeypatch):
    """The second call is prepared from the remembered row and its guarded INSERT sent ahead;
    the operator disabled the tool in between: no request of that call is written, and the call
    is decided anew on the row as it is (refused, recorded once)."""
    assert not tools.execute(echo, {"text": "first"}).is_error
    written = _tool_calls_written(monkeypatch)
    real = ahead.send
    sent: list[ahead.Sent | None] = []

    def disabled_meanwhile(*args: Any, **kwargs: Any) -> ahead.Sent | None:
        # Another connection commits the change before the guarded INSERT runs.
        thread = threading.Thread(target=_disable, args=(echo,))
        thread.start()
        thread.join()
        sent.append(real(*args, **kwargs))
        return sent[-1]

    monkeypatch.setattr(ahead, "send", disabled_meanwhile)
    result = tools.execute(echo, {"text": "second"})
    assert result.is_error and "disabled" in result.text, result.text
    assert written == []
    assert len(sent) == 1 and sent[0] is not None  # its INSERT was sent ahead; the guard stopped it
    assert list(ToolCall.objects.order_by("created").values_list("status", "error_kind")) == [
        (ToolCallStatus.SUCCEEDED, ""),
        (ToolCallStatus.FAILED, "disabled"),
    ]


def _disable(name: str) -> None:
    try:
        McpTool.objects.filter(tool_name=name).update(enabled=False)
    finally:
        connections.close_all()


def test_a_guard_that_fails_at_the_request_sends_the_call_once_on_the_row_read_anew(echo, monkeypatch):
    """The description changed meanwhile (the tool still enabled): the stale attempt writes
    nothing, the call runs once on the fresh row, and the ledger has one row for it."""
    assert not tools.execute(echo, {"text": "first"}).is_error
    written = _tool_calls_written(monkeypatch)
    real = ahead.send
    changed: list[bool] = []

    def changed_meanwhile(row: Any, guard: Any = None) -> ahead.Sent | None:
        if guard is not None and not changed:
            changed.append(True)
            thread = threading.Thread(target=_redescribe, args=(echo,))
            thread.start()
            thread.join()
        return real(row, guard)

    monkeypatch.setattr(ahead, "send", changed_meanwhile)
    result = tools.execute(echo, {"text": "second"})
    assert (result.text, result.is_error) == ("second", False)
    assert changed == [True]
    assert written == [[ToolCallStatus.SUCCEEDED, ToolCallStatus.RUNNING]]  # one request, its row first
    assert list(ToolCall.objects.order_by("created").values_list("status", flat=True)) == [
        ToolCallStatus.SUCCEEDED,
        ToolCallStatus.SUCCEEDED,
    ]


def _redescribe(name: str) -> None:
    try:
        McpTool.objects.filter(tool_name=name).update(description="Echoes, differently.")
    finally:
        connections.close_all()


def _new_call(tool: McpTool) -> NewCall:
    return NewCall(tool.tool_name, '{"text":"hi"}', ledger.actor_fields("tests"), tool=tool)


def test_a_query_on_the_connection_while_the_answer_is_in_flight_reads_it_first():
    tool = guarded_tool(requires_approval=False)
    opening = ledger.open_running(_new_call(tool), timezone.now(), ahead_of_request=True)
    assert opening.sent is not None
    # Django's cursor on the same connection: libpq would refuse a second statement in flight.
    assert ToolCall.objects.filter(status=ToolCallStatus.RUNNING).count() == 1
    call_id = opening.settle()
    assert opening.settle() == call_id
    assert ToolCall.objects.get(pk=call_id).status == ToolCallStatus.RUNNING
    assert not connection.execute_wrappers  # nothing of it left on the connection


def test_a_refused_insert_is_unavailable_and_leaves_the_connection_usable():
    """The row's key is taken already: the database refuses the INSERT sent ahead, and the
    settle says so as a synchronous write would (``LedgerUnavailable``), every time it is asked."""
    tool = guarded_tool(requires_approval=False)
    first = ledger.open_running(_new_call(tool), timezone.now(), ahead_of_request=True).settle()
    opening = ledger.open_running(_new_call(tool), timezone.now(), call_id=first, ahead_of_request=True)
    assert opening.sent is not None
    with pytest.raises(LedgerUnavailable, match="IntegrityError"):
        opening.settle()
    with pytest.raises(LedgerUnavailable):
        opening.settle()
    assert connection.is_usable()
    assert ToolCall.objects.count() == 1


@pytest.mark.parametrize("when", ["before it was sent", "after it was sent"])
def test_a_connection_that_broke_is_replaced_and_the_row_written_once(when):
    """The server ended this connection's session before the INSERT went out (it is written
    again on a fresh connection) or after it was sent (committed already: the second write
    meets it, and the row counts as written). Either way one row, running, and the call's own."""
    tool = guarded_tool(requires_approval=False)
    connection.ensure_connection()
    assert connection.connection is not None
    backend = connection.connection.info.backend_pid
    if when == "before it was sent":
        _terminate(backend)
    opening = ledger.open_running(_new_call(tool), timezone.now(), ahead_of_request=True)
    if when == "after it was sent":
        assert opening.sent is not None
        time.sleep(0.2)  # committed by the server before its session ends
        _terminate(backend)
    call_id = opening.settle()
    assert list(ToolCall.objects.values_list("pk", "status")) == [(call_id, ToolCallStatus.RUNNING)]
    assert connection.connection.info.backend_pid != backend


def _terminate(backend: int) -> None:
    def end() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])
        finally:
            connections.close_all()

    thread = threading.Thread(target=end)
    thread.start()
    thread.join()


def test_nothing_is_sent_ahead_while_the_site_watches_its_queries():
    """Django's query log and a site's execute wrapper see every statement through Django's
    cursor, which a statement sent ahead would bypass: the row is then written as usual."""
    tool = guarded_tool(requires_approval=False)
    with CaptureQueriesContext(connection) as captured:
        opening = ledger.open_running(_new_call(tool), timezone.now(), ahead_of_request=True)
    assert opening.sent is None
    assert any(query["sql"].startswith("INSERT") for query in captured.captured_queries)
    seen: list[str] = []

    def watching(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(watching):
        opening = ledger.open_running(_new_call(tool), timezone.now(), ahead_of_request=True)
    assert opening.sent is None
    assert any(sql.startswith("INSERT") for sql in seen)
    assert ToolCall.objects.count() == 2


def test_a_withheld_request_is_reported_as_no_request(echo, monkeypatch, otel: Otel):
    """The request the guard stopped never left: no request span, no request duration; the
    call's own span says what happened to it (refused, the tool disabled meanwhile)."""
    assert not tools.execute(echo, {"text": "first"}).is_error
    assert [span.name for span in otel.spans()] == ["tools/call echo", "execute_tool mcp_demo_echo"]
    requests_before = sum(point.count for point in otel.points(DURATION_METRIC))
    otel.exporter.clear()
    real = ahead.send

    def disabled_meanwhile(*args: Any, **kwargs: Any) -> ahead.Sent | None:
        thread = threading.Thread(target=_disable, args=(echo,))
        thread.start()
        thread.join()
        return real(*args, **kwargs)

    monkeypatch.setattr(ahead, "send", disabled_meanwhile)
    assert tools.execute(echo, {"text": "second"}).is_error
    (span,) = otel.spans()
    assert span.name == "execute_tool mcp_demo_echo"
    assert attributes_of(span)["error.type"] == "disabled"
    assert sum(point.count for point in otel.points(DURATION_METRIC)) == requests_before
