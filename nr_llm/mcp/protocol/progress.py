"""Progress of a request: ``notifications/progress`` a server sends while it works on it.

A request asks for them with a ``progressToken`` in its ``params._meta``; the server's
notifications carrying that token (on the request's event stream, or the session's) are handed,
decoded and clipped, to the caller's ``on_progress``. A notification that is malformed or carries
another token is ignored: progress is advice, never a reason to fail a call.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..wire.text import clean

logger = logging.getLogger("nr_llm.mcp")

NOTIFICATION = "notifications/progress"
MESSAGE_CHARS = 200


@dataclass(frozen=True)
class Progress:
    """The latest a server said of its work: ``progress`` grows; ``total`` when it knows one."""

    progress: float
    total: float | None = None
    message: str = ""


ProgressListener = Callable[[Progress], None]


def new_token() -> str:
    return uuid.uuid4().hex


def with_token(params: dict[str, Any], token: str) -> dict[str, Any]:
    """``params`` asking for progress under ``token`` (a caller's own ``_meta`` members kept)."""
    return {**params, "_meta": {**dict(params.get("_meta") or {}), "progressToken": token}}


def reader(token: str, on_progress: ProgressListener) -> Callable[[dict[str, Any]], None]:
    """A notification handler that passes this request's progress to ``on_progress``; what the
    listener raises is logged, never raised into the call."""

    def read(message: dict[str, Any]) -> None:
        if message.get("method") != NOTIFICATION:
            return
        progress = parsed(message.get("params"), token)
        if progress is None:
            return
        try:
            on_progress(progress)
        except Exception:
            # A reporting boundary: a listener's failure is logged and the call reads on, so
            # a listener can never serve as a way to stop a request (no cancellation seam).
            logger.warning("a progress listener failed; the call goes on", exc_info=True)

    return read


def parsed(params: object, token: str) -> Progress | None:
    """The progress in a notification's ``params`` for ``token``, or None."""
    if not isinstance(params, dict) or params.get("progressToken") != token:
        return None
    value, total = _number(params.get("progress")), _number(params.get("total"))
    if value is None:
        return None
    message = params.get("message")
    return Progress(value, total, clean(message, MESSAGE_CHARS) if isinstance(message, str) else "")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
