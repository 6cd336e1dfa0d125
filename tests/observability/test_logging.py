"""The bounded queue handler and the JSON lines formatter."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime

from nr_llm.observability import RequestEvent
from nr_llm.observability.json_lines import JsonLinesFormatter
from nr_llm.observability.queue_handler import BoundedQueueHandler


class Gate(logging.Handler):
    """A sink that holds every record until the gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.open = threading.Event()
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        assert self.open.wait(10)
        self.records.append(record.getMessage())


def record(message: str) -> logging.LogRecord:
    return logging.LogRecord("nr_llm.requests", logging.INFO, __file__, 1, message, None, None)


def test_a_full_queue_counts_drops_without_blocking_or_printing(capsys):
    """With the sink stuck, records beyond the bound are counted as dropped; nothing blocks and
    nothing is printed; the rest arrive in order once the sink moves."""
    gate = Gate()
    handler = BoundedQueueHandler(gate, maxsize=3)
    try:
        for number in range(10):
            handler.handle(record(f"row {number}"))
        # One row may already sit in the stuck sink; the queue holds three more.
        assert handler.dropped in (6, 7)
        gate.open.set()
    finally:
        handler.close()
    assert gate.records == [f"row {n}" for n in range(10 - handler.dropped)]
    assert capsys.readouterr() == ("", "")


def test_close_delivers_everything_queued():
    """close() drains the queue into the sink before it returns."""
    gate = Gate()
    gate.open.set()
    handler = BoundedQueueHandler({"class": "logging.NullHandler"}, maxsize=5)
    handler.target = gate
    for number in range(5):
        handler.handle(record(f"row {number}"))
    handler.close()
    assert gate.records == [f"row {n}" for n in range(5)]


def test_an_event_becomes_one_json_line():
    """The formatter writes the event row under "event", on a single line."""
    event = RequestEvent(
        request_id="rid",
        trace_id=None,
        method="GET",
        route="demo/slow/",
        status_code=200,
        ok=True,
        duration_ms=1.5,
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    line_record = record("request.completed\nsecond line")
    line_record.nr_llm_event = event
    line = JsonLinesFormatter().format(line_record)
    assert "\n" not in line
    row = json.loads(line)
    assert row["event"] == event.as_dict()
    assert "outcome" not in row["event"]
    assert row["message"] == "request.completed\nsecond line"


def test_a_record_that_cannot_be_formatted_never_raises_into_the_caller():
    """A logging call with mismatched arguments goes to handleError, as any stdlib handler's
    emit does; it is not raised into the code that logged (a request), and later records
    still arrive."""
    gate = Gate()
    gate.open.set()
    handler = BoundedQueueHandler(gate, maxsize=5)
    handler.handleError = lambda record: None  # type: ignore[method-assign]
    try:
        broken = logging.LogRecord("nr_llm.requests", logging.INFO, __file__, 1, "%s and %s", ("one",), None)
        handler.handle(broken)
        handler.handle(record("after"))
    finally:
        handler.close()
    assert gate.records == ["after"]


def test_a_filter_on_the_queue_handler_still_decides():
    """The handler skips the filter call only when it has no filters: one it has is applied
    before queueing, and what it rejects never reaches the sink."""
    gate = Gate()
    gate.open.set()
    handler = BoundedQueueHandler(gate)
    handler.addFilter(lambda candidate: "keep" in candidate.getMessage())
    try:
        assert handler.handle(record("keep me")) is True
        assert handler.handle(record("drop me")) is False
    finally:
        handler.close()
    assert gate.records == ["keep me"]
