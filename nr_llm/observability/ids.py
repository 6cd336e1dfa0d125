"""Request identity: a request id and the W3C trace id, taken from headers when sane."""

from __future__ import annotations

import re
import uuid

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def request_id_from(header: str | None) -> str:
    """The client's X-Request-ID when it is a plain token; a fresh one otherwise.

    A header that could carry newlines or markup into a log line is replaced, not
    escaped: an id is only useful if it is safe to grep for.
    """
    if header and _REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def trace_id_from(traceparent: str | None) -> str | None:
    """The trace id of a valid ``traceparent`` header (W3C Trace Context), else None."""
    if not traceparent:
        return None
    match = _TRACEPARENT.fullmatch(traceparent.strip())
    if match is None or traceparent.startswith("ff") or set(match.group(1)) == {"0"}:
        return None
    return match.group(1)
