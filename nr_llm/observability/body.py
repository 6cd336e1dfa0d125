"""``read_json``: a bounded JSON body reader that never parses a partial body (seed 003)."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import BadRequest
from django.http import HttpRequest

from .signal import signal_for


class BodyRejected(BadRequest):
    """A body the client must fix: 413 too large or 400 invalid.

    A ``BadRequest`` so that, even without the middleware, Django answers 400 rather
    than 500; the middleware answers with the precise status and a JSON error.
    """

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


def read_json(request: HttpRequest, *, max_bytes: int) -> Any:
    """Parse the request body as JSON, reading at most ``max_bytes``.

    A client that leaves mid-body raises the signal's canonical reason (a 499 through
    the middleware) instead of handing a truncated body to the parser.
    """
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.strip():
        try:
            length = int(declared)
        except ValueError:
            raise BodyRejected("Content-Length is not a number.", 400) from None
        if length < 0:
            raise BodyRejected("Content-Length is negative.", 400)
        if length > max_bytes:
            raise BodyRejected(f"The body is larger than {max_bytes} bytes.", 413)
    signal = signal_for(request)
    try:
        body = request.body if hasattr(request, "_body") else request.read(max_bytes + 1)
    except OSError:
        # Django wraps the stream's error in UnreadablePostError; raise the canonical
        # reason itself so every reader of this request sees one and the same object.
        if signal is not None and signal.aborted:
            signal.raise_reason()
        raise
    if len(body) > max_bytes:
        raise BodyRejected(f"The body is larger than {max_bytes} bytes.", 413)
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BodyRejected(f"The body is not valid JSON: {exc}", 400) from None
