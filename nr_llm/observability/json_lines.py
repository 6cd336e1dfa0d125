"""A formatter that writes one JSON object per line: events as rows, other records plainly."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from .completion import ACCESS_ATTRIBUTE
from .events import EVENT_ATTRIBUTE, RequestEvent

# What json.dumps(row, default=str) builds on every call; one instance (it keeps no
# per-call state) writes the same text without constructing an encoder per record.
_ENCODER = json.JSONEncoder(default=str)


class JsonLinesFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        row: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        event = getattr(record, EVENT_ATTRIBUTE, None)
        if isinstance(event, RequestEvent):
            row["event"] = event.as_dict()
        access = getattr(record, ACCESS_ATTRIBUTE, None)
        if isinstance(access, dict):
            row["access"] = access
        status = getattr(record, "status_code", None)
        if isinstance(status, int):
            row["status_code"] = status
        if record.exc_info:
            row["exc_info"] = self.formatException(record.exc_info)
        # json.dumps escapes newlines and control characters: one record, one line.
        return _ENCODER.encode(row)
