"""``read_json``: a bounded JSON body reader that never parses a partial body."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import BadRequest
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

from .signal import signal_for
from .wsgi import read_terminated

LENGTH_REQUIRED = 411


class BodyRejected(BadRequest):
    """A ``BadRequest``, so Django answers 400 rather than 500 even without the middleware."""

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


def read_json(request: HttpRequest, *, max_bytes: int) -> Any:
    """Parse the request body as JSON, reading at most ``max_bytes``; a client that leaves
    mid-body raises the disconnect instead of handing a truncated body to the parser."""
    meta = request.META
    declared = meta.get("CONTENT_LENGTH") or ""
    if declared.strip():
        try:
            length = int(declared)
        except ValueError:
            raise BodyRejected("Content-Length is not a number.", 400) from None
        if length < 0:
            raise BodyRejected("Content-Length is negative.", 400)
        if length > max_bytes:
            raise BodyRejected(f"The body is larger than {max_bytes} bytes.", 413)
        body = _read(request, max_bytes)
    elif _unsized_but_whole(request):
        body = _read(request, max_bytes)
    elif meta.get("wsgi.input_terminated"):
        # Django reads nothing without a Content-Length; the server's stream ends with the body.
        body = read_terminated(meta["wsgi.input"], max_bytes + 1, signal_for(request))
    else:
        raise BodyRejected(
            "A Content-Length is required: the body is chunked and this server does not mark "
            "where a chunked body ends (no wsgi.input_terminated).",
            LENGTH_REQUIRED,
        )
    if len(body) > max_bytes:
        raise BodyRejected(f"The body is larger than {max_bytes} bytes.", 413)
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyRejected(f"The body is not valid JSON: {exc}", 400) from None


def _unsized_but_whole(request: HttpRequest) -> bool:
    """Read already, ASGI (whole before the view), or no Transfer-Encoding either (no body)."""
    return (
        hasattr(request, "_body")
        or isinstance(request, ASGIRequest)
        or "HTTP_TRANSFER_ENCODING" not in request.META
    )


def _read(request: HttpRequest, max_bytes: int) -> bytes:
    signal = signal_for(request)
    try:
        return request.body if hasattr(request, "_body") else request.read(max_bytes + 1)
    except OSError:
        # Not Django's UnreadablePostError: every reader must see the same object.
        if signal is not None and signal.aborted:
            signal.raise_reason()
        raise
