"""A bounded, non-blocking queue handler: a slow sink never stalls a request.

Records go into a bounded queue that one listener thread drains into the target
handler. A full queue drops the record and counts it (``dropped``) instead of blocking
the request or printing a traceback through ``handleError``.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import queue
import threading
from collections.abc import Mapping
from typing import Any

from django.utils.module_loading import import_string


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


class _Listener(logging.handlers.QueueListener):
    def __init__(self, bounded: queue.Queue[Any], target: logging.Handler) -> None:
        super().__init__(bounded, target, respect_handler_level=True)
        self._bounded = bounded

    def stop(self, timeout: float = 5.0) -> None:
        """Deliver what is queued, then stop; a bounded wait where the stdlib's never ends.

        The stdlib puts its stop sentinel with put_nowait, which fails on a full bounded
        queue; waiting for room is right, waiting forever on a stuck sink is not.
        """
        thread = self._thread
        if thread is None:
            return
        self._thread = None
        try:
            self._bounded.put(None, timeout=timeout)  # None is the stdlib's stop sentinel
        except queue.Full:
            return  # the sink is stuck; the daemon thread must not hold up shutdown
        thread.join(timeout)


class BoundedQueueHandler(logging.handlers.QueueHandler):
    def __init__(self, target: logging.Handler | Mapping[str, Any], maxsize: int = 10_000) -> None:
        if maxsize <= 0:
            raise ValueError("maxsize must be positive: an unbounded queue is not a bound")
        self._bounded: queue.Queue[Any] = queue.Queue(maxsize)
        super().__init__(self._bounded)
        self.target = build_handler(target)
        self._dropped = 0
        self._count_lock = threading.Lock()
        self._listener: _Listener | None = None
        self._listener_pid: int | None = None
        self._start_lock = threading.Lock()

    @property
    def dropped(self) -> int:
        return self._dropped

    def _ensure_listener(self) -> None:
        # Started lazily and per process: a thread started before a pre-fork server
        # forks does not exist in the worker.
        pid = os.getpid()
        if self._listener_pid == pid:
            return
        with self._start_lock:
            if self._listener_pid != pid:
                # The formatter LOGGING gives this handler is applied where the work now
                # happens: in the target, on the listener thread.
                if self.target.formatter is None and self.formatter is not None:
                    self.target.setFormatter(self.formatter)
                self._listener = _Listener(self._bounded, self.target)
                self._listener.start()
                self._listener_pid = pid

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """Freeze the message, but leave formatting to the listener thread.

        The stdlib formats in the caller, i.e. inside the request; here the caller only
        resolves ``msg % args`` (arguments may change after the call) and any traceback.
        In place, as Python 3.11's QueueHandler does: every handler still sees the same
        message, and a copy per record is a measurable share of a request.
        """
        if record.args:
            record.msg = record.getMessage()
            record.args = None
        if record.exc_info:
            record.exc_text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        self._ensure_listener()
        try:
            self._bounded.put_nowait(record)
        except queue.Full:
            with self._count_lock:
                self._dropped += 1

    def flush(self) -> None:
        """Wait (bounded by the queue) until every record so far reached the target."""
        if self._listener is not None and self._listener_pid == os.getpid():
            self._bounded.join()
        self.target.flush()

    def close(self) -> None:
        try:
            if self._listener is not None and self._listener_pid == os.getpid():
                self._listener.stop()  # drains what is queued, then joins the thread
            self._listener = None
            self._listener_pid = None
            self.target.close()
        finally:
            super().close()
