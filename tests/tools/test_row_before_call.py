"""The ledger row of a call is committed before the call can reach the server, whatever the
client, and a row that cannot be written stops the call unsent: against the official SDK server."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import OperationalError, connection

from nr_llm import own_transaction, tools
from nr_llm.governance import ledger
from nr_llm.mcp.wire.legs import LegMachine
from nr_llm.models import ToolCall, ToolCallStatus
from tests import catalogue_peers
from tests.catalogue_peers import imported_demo
from tests.fakes import FakeClient
from tests.governance.helpers import row_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


stateless_url = catalogue_peers.stateless_url
loopback_allowed = catalogue_peers.loopback_allowed


@pytest.fixture
def echo(stateless_url, loopback_allowed):
    imported_demo(stateless_url, "echo")
    return "mcp_demo_echo"


def _rows_when_calls_are_written(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ledger's rows (their status) at the moment each tools/call leg goes to the wire, as
    another connection (another thread's) reads them: committed, not merely written."""
    seen: list[list[str]] = []
    real = LegMachine.send

    def read_elsewhere() -> None:
        try:
            seen.append(list(ToolCall.objects.values_list("status", flat=True)))
        finally:
            connection.close()

    def send(self: LegMachine, *args: Any, **kwargs: Any) -> Any:
        if b'"tools/call"' in (kwargs.get("body") or b""):
            reader = threading.Thread(target=read_elsewhere)
            reader.start()
            reader.join(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LegMachine, "send", send)
    return seen


def test_the_call_waits_for_its_row_however_slow_the_write(echo, monkeypatch):
    """A row that takes 300 ms to write is committed before the request is written."""
    seen = _rows_when_calls_are_written(monkeypatch)
    real = own_transaction.run_in_own_transaction

    def slow(work: Any, **options: Any) -> Any:
        time.sleep(0.3)
        return real(work, **options)

    monkeypatch.setattr(ledger, "run_in_own_transaction", slow)
    result = tools.execute(echo, {"text": "hi"})
    assert (result.text, result.is_error) == ("hi", False)
    assert seen == [[ToolCallStatus.RUNNING]]
    assert row_of(result).status == ToolCallStatus.SUCCEEDED


def test_a_row_that_cannot_be_written_stops_the_call_unsent(echo, monkeypatch, caplog):
    """The database refuses the running row: no tools/call leaves the client, and the result
    says the call could not run (it was not sent)."""
    seen = _rows_when_calls_are_written(monkeypatch)

    def refused(work: Any, **options: Any) -> Any:
        raise OperationalError("the database system is in recovery mode")

    monkeypatch.setattr(ledger, "run_in_own_transaction", refused)
    result = tools.execute(echo, {"text": "hi"})
    assert result.is_error and result.call_id is None
    assert "could not run" in result.text and "it was not sent" in result.text
    assert seen == []  # no tools/call leg was written
    assert "was not recorded in the ledger" in caplog.text


def test_a_client_of_another_kind_gets_the_row_before_it_is_called(echo):
    """A site's own ToolCaller knows no hook: the row is committed before call_tool is called."""
    statuses: list[list[str]] = []

    class Watching(FakeClient):
        def call_tool(self, *args: Any, **kwargs: Any) -> Any:
            statuses.append(list(ToolCall.objects.values_list("status", flat=True)))
            return super().call_tool(*args, **kwargs)

    result = tools.execute(echo, {"text": "hi"}, client=Watching())
    assert statuses == [[ToolCallStatus.RUNNING]]
    assert row_of(result).status != ToolCallStatus.RUNNING
