"""Batched delivery: one write per batch for a plain stream, the same lines as per record."""

from __future__ import annotations

import io
import logging
import logging.handlers
import subprocess
import sys
import textwrap
from pathlib import Path

from nr_llm.observability.batch_write import batchable, deliver, write_batch
from nr_llm.observability.queue_handler import BoundedQueueHandler

ROOT = Path(__file__).resolve().parents[2]


class CountingStream(io.StringIO):
    """A stream that counts the writes and flushes it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0
        self.flushes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


class DropNamed(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "drop me"


def records() -> list[logging.LogRecord]:
    made = []
    for number, (level, message) in enumerate(
        [(logging.INFO, "first"), (logging.DEBUG, "below the level"), (logging.WARNING, "drop me"),
         (logging.ERROR, "second"), (logging.INFO, "third with\nnewline")]
    ):  # fmt: skip
        made.append(logging.LogRecord("nr_llm.access", level, __file__, number, message, None, None))
    return made


def stream_handler(stream: io.StringIO) -> logging.StreamHandler:  # type: ignore[type-arg]
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.INFO)
    handler.addFilter(DropNamed())
    handler.setFormatter(logging.Formatter("%(levelname)s %(lineno)d %(message)s"))
    return handler


def test_a_batch_is_one_write_of_the_lines_handle_would_write():
    """Level, filter, formatter and terminator apply as in handle(); the text is identical,
    in order, written with one write and one flush."""
    expected_stream = io.StringIO()
    per_record = stream_handler(expected_stream)
    for record in records():
        if record.levelno >= per_record.level:
            per_record.handle(record)
    stream = CountingStream()
    batched = stream_handler(stream)
    deliver(batched, records())
    assert stream.getvalue() == expected_stream.getvalue()
    assert stream.getvalue() == "INFO 0 first\nERROR 3 second\nINFO 4 third with\nnewline\n"
    assert (stream.writes, stream.flushes) == (1, 1)


class Broken(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if record.getMessage() == "second":
            raise ValueError("cannot format this one")
        return super().format(record)


class Reporting(logging.StreamHandler):  # type: ignore[type-arg]
    """handleError collects instead of printing; emit stays the stdlib's."""

    def __init__(self, stream: io.StringIO) -> None:
        super().__init__(stream)
        self.failed: list[str] = []

    def handleError(self, record: logging.LogRecord) -> None:
        self.failed.append(record.getMessage())


def test_a_record_that_fails_to_format_goes_to_handle_error_and_the_rest_are_written():
    """As StreamHandler.emit does per record: the failure is reported, nothing else is lost."""
    stream = io.StringIO()
    handler = Reporting(stream)
    handler.setFormatter(Broken("%(message)s"))
    assert batchable(handler)
    deliver(handler, records())
    assert handler.failed == ["second"]
    assert stream.getvalue() == "first\nbelow the level\ndrop me\nthird with\nnewline\n"


class OwnEmit(logging.StreamHandler):  # type: ignore[type-arg]
    def __init__(self) -> None:
        super().__init__(io.StringIO())
        self.emitted: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.emitted.append(record.getMessage())


def test_a_handler_with_its_own_emit_gets_every_record_through_handle(tmp_path):
    """Rotating files and a site's own handlers keep their per-record semantics."""
    own = OwnEmit()
    rotating = logging.handlers.RotatingFileHandler(tmp_path / "log", maxBytes=10_000)
    try:
        assert not batchable(own)
        assert not batchable(rotating)
        deliver(own, records())
        assert own.emitted == [record.getMessage() for record in records()]
    finally:
        rotating.close()


def test_a_delayed_file_handler_opens_its_file_and_then_batches(tmp_path):
    """FileHandler(delay=True) has no stream until its own emit() opens it."""
    path = tmp_path / "events.log"
    handler = logging.FileHandler(path, delay=True)
    try:
        assert not batchable(handler)
        deliver(handler, records()[:1])
        assert batchable(handler)
        deliver(handler, records()[3:])
    finally:
        handler.close()
    assert path.read_text() == "first\nsecond\nthird with\nnewline\n"


def test_the_queue_handler_writes_a_backlog_in_few_writes():
    """Records queued between two drains reach a stream in one write per batch, in order."""
    stream = CountingStream()
    queue = BoundedQueueHandler(logging.StreamHandler(stream), interval=60)
    try:
        for number in range(100):
            queue.handle(
                logging.LogRecord("nr_llm.access", logging.INFO, __file__, 1, f"row {number}", None, None)
            )
        queue.flush()
    finally:
        queue.close()
    assert stream.getvalue().splitlines() == [f"row {number}" for number in range(100)]
    # The listener may have drained once before the loop finished; never once per record.
    assert stream.writes <= 3


def test_a_forked_worker_draws_its_own_request_id_prefix():
    """Pre-forked workers never share ids: the at-fork hook redraws the child's prefix."""
    code = textwrap.dedent(
        """
        import os
        from nr_llm.observability.ids import request_id_from
        before = request_id_from(None)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(write, request_id_from(None).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        child = os.read(read, 64).decode()
        print(before, request_id_from(None), child)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True, cwd=ROOT
    )
    before, after, child = result.stdout.split()
    assert before[:16] == after[:16]  # the parent keeps its prefix and counts on
    assert int(after[16:], 16) == int(before[16:], 16) + 1
    assert child[:16] != before[:16]
    assert len(child) == 32


def test_a_file_handler_closed_between_check_and_write_reopens_as_it_would_per_record(tmp_path):
    """A FileHandler closed after batchable() said yes writes the batch through its own
    emit(), which reopens the file: no record is lost."""
    path = tmp_path / "events.log"
    handler = logging.FileHandler(path)
    try:
        assert batchable(handler)
        handler.close()  # what a logging reconfiguration does to the old handler

        write_batch(handler, records()[3:])
    finally:
        handler.close()
    assert path.read_text() == "second\nthird with\nnewline\n"
