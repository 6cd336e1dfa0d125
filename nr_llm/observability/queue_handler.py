"""A bounded, non-blocking queue handler: a slow sink never stalls a request.

``emit()`` only appends to a bounded buffer; one listener thread per process drains it
into the target handler every ``interval`` seconds (and on ``flush()``/``close()``). A
full buffer drops the record and counts it (``dropped``) instead of blocking the request
or printing a traceback through ``handleError``.

Why not the stdlib's QueueHandler/QueueListener: their listener is woken for every record
(a lock and a condition per put), their stop sentinel is put with ``put_nowait`` and
fails on a full bounded queue, and formatting happens in the caller, i.e. inside the
request. Draining on a short timer batches the hand-over; a record waits at most about
``interval`` before it reaches the sink.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

from django.utils.module_loading import import_string

from .batch_write import BATCH, deliver

# This process's id, kept current by an at-fork hook: emit() compares it on every record,
# and os.getpid() is a syscall each time.
_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def build_handler(target: logging.Handler | Mapping[str, Any]) -> logging.Handler:
    """A handler object, or one built from ``{"class": dotted.path, **kwargs}``.

    The mapping form is what ``LOGGING`` can express; dictConfig converts values such
    as ``"ext://sys.stderr"`` when they are read.
    """
    if isinstance(target, logging.Handler):
        return target
    spec = {key: target[key] for key in target}
    handler_class = import_string(spec.pop("class"))
    handler = handler_class(**spec)
    if not isinstance(handler, logging.Handler):
        raise TypeError(f"{handler_class!r} did not build a logging.Handler")
    return handler


class BoundedQueueHandler(logging.Handler):
    def __init__(
        self,
        target: logging.Handler | Mapping[str, Any],
        maxsize: int = 10_000,
        interval: float = 0.05,
        stop_timeout: float = 5.0,
    ) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive: an unbounded queue is not a bound")
        super().__init__()
        self.target = build_handler(target)
        self.maxsize = maxsize
        self.interval = interval
        self.stop_timeout = stop_timeout
        self._buffer: collections.deque[logging.LogRecord] = collections.deque()
        self._dropped = 0
        self._drop_lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._thread_pid: int | None = None
        self._start_lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return self._dropped

    def handle(self, record: logging.LogRecord) -> bool:
        # No handler lock: deque.append is atomic, and taking a lock per record is what
        # this handler exists to avoid. No filter call when there are no filters: this
        # runs for every record of every request.
        if self.filters and not self.filter(record):
            return False
        self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        if self._thread_pid != _pid:
            self._ensure_thread()
        if len(self._buffer) >= self.maxsize:
            with self._drop_lock:
                self._dropped += 1
            return
        try:
            prepared = self.prepare(record)
        except Exception:
            # A logging call must never raise into the code that logged (a request);
            # report it the way every stdlib handler's emit() does.
            self.handleError(record)
            return
        self._buffer.append(prepared)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """Freeze the message, but leave formatting to the listener thread.

        Only ``msg % args`` (arguments may change after the call) and a traceback are
        resolved here. In place, as Python 3.11's QueueHandler does: every handler still
        sees the same message, and a copy per record is a measurable share of a request.
        """
        if record.args:
            record.msg = record.getMessage()
            record.args = None
        if record.exc_info:
            record.exc_text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record

    def _ensure_thread(self) -> None:
        # Started lazily and per process: a thread started before a pre-fork server
        # forks does not exist in the worker.
        pid = _pid
        if self._thread_pid == pid:
            return
        with self._start_lock:
            if self._thread_pid == pid:
                return
            # The formatter LOGGING gives this handler is applied where the work happens.
            if self.target.formatter is None and self.formatter is not None:
                self.target.setFormatter(self.formatter)
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="nr_llm-log-drain", daemon=True)
            self._thread.start()
            self._thread_pid = pid

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.interval)
            self._wake.clear()
            self._drain()
        self._drain()

    def _drain(self, timeout: float = -1) -> bool:
        if not self._drain_lock.acquire(timeout=timeout):
            return False
        try:
            while self._buffer:
                batch: list[logging.LogRecord] = []
                with contextlib.suppress(IndexError):
                    while len(batch) < BATCH:
                        batch.append(self._buffer.popleft())
                deliver(self.target, batch)
        finally:
            self._drain_lock.release()
        return True

    def flush(self) -> None:
        """Deliver every record so far, waiting at most ``stop_timeout`` for a busy sink."""
        if self._thread_pid == os.getpid():
            self._drain(timeout=self.stop_timeout)
        self.target.flush()

    def close(self) -> None:
        try:
            thread = self._thread
            if thread is not None and self._thread_pid == os.getpid():
                self._stopping = True
                self._wake.set()
                # Bounded: a stuck sink must not hold up interpreter shutdown.
                thread.join(self.stop_timeout)
            self._thread = None
            self._thread_pid = None
            self.target.close()
        finally:
            super().close()
