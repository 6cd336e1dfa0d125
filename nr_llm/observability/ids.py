"""Request identity: a request id and the W3C trace id, taken from headers when sane."""

from __future__ import annotations

import itertools
import os
import re

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")


def request_id_from(header: str | None) -> str:
    """The client's X-Request-ID when it is a plain token, else a fresh one: an id is only
    useful if it is safe to grep for."""
    if header and _REQUEST_ID.fullmatch(header):
        return header
    return _new_request_id()


class _Ids:
    """A random per-process prefix and a counter: uuid4() per request was a measurable cost
    (bench/request_overhead.py). A forked child draws its own prefix."""

    def __init__(self) -> None:
        self._draw()
        os.register_at_fork(after_in_child=self._draw)

    def _draw(self) -> None:
        # One tuple, so a concurrent next() never pairs a new prefix with an old count.
        self._state = (os.urandom(8).hex(), itertools.count())

    def next(self) -> str:
        prefix, counter = self._state
        return f"{prefix}{next(counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


_new_request_id = _Ids().next


def trace_id_from(traceparent: str | None) -> str | None:
    """The trace id of a valid ``traceparent`` header (W3C Trace Context), else None."""
    if not traceparent:
        return None
    match = _TRACEPARENT.fullmatch(traceparent.strip())
    if match is None:
        return None
    version, trace_id, parent_id = match.groups()
    # W3C Trace Context: version ff and all-zero trace or parent ids are invalid.
    if version == "ff" or set(trace_id) == {"0"} or set(parent_id) == {"0"}:
        return None
    return trace_id
