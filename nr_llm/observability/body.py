"""``read_json``: a bounded JSON body reader that never parses a partial body (seed 003)."""

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
    """A body the client must fix: 413 too large, 411 length required, or 400 invalid.

    A ``BadRequest`` so that, even without the middleware, Django answers 400 rather
    than 500; the middleware answers with the precise status and a JSON error.
    """

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


def read_json(request: HttpRequest, *, max_bytes: int) -> Any:
    """Parse the request body as JSON, reading at most ``max_bytes``.

    A body with a Content-Length is refused with 413 before it is read when the length is
    over the limit. A chunked body (no Content-Length) is read up to the limit where the
    server marks its end (``wsgi.input_terminated``; under ASGI Django has the whole body
    already) and refused with 413 past it; where the server does not, it is 411 Length
    Required. A client that leaves mid-body raises the signal's canonical reason (a 499
    through the middleware) instead of handing a truncated body to the parser.
    """
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
        # Django's WSGIRequest reads nothing without a Content-Length: read the server's own
        # stream, which ends where the chunked body ends.
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
    """Without a Content-Length, whether Django's own stream has the whole body: it was read
    already; or ASGI, where Django receives the whole body before the view; or there is
    neither a length nor a Transfer-Encoding, which HTTP/1.1 says is no body at all."""
    return (
        hasattr(request, "_body")
        or isinstance(request, ASGIRequest)
        or "HTTP_TRANSFER_ENCODING" not in request.META
    )


def _read(request: HttpRequest, max_bytes: int) -> bytes:
    """The body through Django's own request stream, at most one byte past the limit."""
    signal = signal_for(request)
    try:
        return request.body if hasattr(request, "_body") else request.read(max_bytes + 1)
    except OSError:
        # Django wraps the stream's error in UnreadablePostError; raise the canonical
        # reason itself so every reader of this request sees one and the same object.
        if signal is not None and signal.aborted:
            signal.raise_reason()
        raise
