"""Hand a batch of records to a handler; one write and one flush for a plain stream.

``logging.StreamHandler`` (and ``FileHandler``) write and flush every record: two
completion records per request are two ``write`` syscalls, about as much CPU as the rest
of the completion machinery. The queue handler's listener already holds a batch, so for
a stream handler whose ``emit`` is the stdlib's own it writes the batch's lines with one
``write`` and one ``flush``: the same bytes in the same order, the handler's level,
filters, formatter, lock and ``handleError`` respected. Any other handler (rotating
files, sockets, a site's own) gets ``handle()`` per record, exactly as before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

# Records per write: bounds the string joined under the handler's lock.
BATCH = 512

_PLAIN_EMITS = (logging.StreamHandler.emit, logging.FileHandler.emit)


def batchable(handler: logging.Handler) -> bool:
    """A stream handler whose emit/handle are the stdlib's and whose stream is open."""
    cls = type(handler)
    return (
        isinstance(handler, logging.StreamHandler)
        and cls.emit in _PLAIN_EMITS
        and cls.handle is logging.Handler.handle
        # A FileHandler opened with delay=True opens its file in emit(): let it.
        and handler.stream is not None
    )


def deliver(handler: logging.Handler, records: Sequence[logging.LogRecord]) -> None:
    if len(records) > 1 and batchable(handler):
        assert isinstance(handler, logging.StreamHandler)
        write_batch(handler, records)
        return
    for record in records:
        if record.levelno >= handler.level:
            handler.handle(record)


def write_batch(handler: logging.StreamHandler, records: Sequence[logging.LogRecord]) -> None:  # type: ignore[type-arg]
    """What ``handle()`` per record would write, as one write and one flush."""
    lines: list[str] = []
    last: logging.LogRecord | None = None
    handler.acquire()
    try:
        if handler.stream is None:
            # Closed since batchable() looked: per record, FileHandler.emit reopens as usual.
            for record in records:
                if record.levelno >= handler.level:
                    handler.handle(record)
            return
        for record in records:
            if record.levelno < handler.level:
                continue
            passed = handler.filter(record)
            if not passed:
                continue
            if isinstance(passed, logging.LogRecord):  # Python 3.12: a filter may swap it
                record = passed
            try:
                lines.append(handler.format(record) + handler.terminator)
            except RecursionError:  # as StreamHandler.emit: see bpo-36272
                raise
            except Exception:
                handler.handleError(record)
            else:
                last = record
        if last is None:
            return
        try:
            handler.stream.write("".join(lines))
            handler.flush()
        except RecursionError:
            raise
        except Exception:
            handler.handleError(last)
    finally:
        handler.release()
