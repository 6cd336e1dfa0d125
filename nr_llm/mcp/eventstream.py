"""An incremental ``text/event-stream`` decoder (the WHATWG rules MCP's transport uses).

Fed the body chunk by chunk as it arrives, so the transport can stop reading the moment
the answer it waits for has been dispatched, even if the server keeps the stream open.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

MAX_RETRY_MS = 86_400_000  # a day: 8 digits


@dataclass(frozen=True)
class Event:
    data: str
    event: str = "message"
    id: str | None = None
    retry_ms: int | None = None


class EventStreamDecoder:
    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        # The unterminated tail, kept as fragments: a long line trickling in as tiny
        # chunks is appended, not re-copied and re-scanned on every chunk (quadratic).
        self._pending: list[str] = []
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[Event]:
        decoded = self._text.decode(chunk)
        pending = self._pending
        # No line can end in this chunk (no terminator, and no CR waiting for its LF).
        if "\n" not in decoded and "\r" not in decoded and not (pending and pending[-1].endswith("\r")):
            if decoded:
                pending.append(decoded)
            return []
        text = "".join(pending) + decoded
        events: list[Event] = []
        start = 0
        while (cut := _line_end(text, start)) is not None:
            end, after = cut
            event = self._line(text[start:end])
            if event is not None:
                events.append(event)
            start = after
        rest = text[start:]
        self._pending = [rest] if rest else []
        return events

    def _line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, e.g. a keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            # ASCII digits only (str.isdigit also takes "²"); a number past a day is a day,
            # which no budget fits, without converting thousands of digits.
            self._retry = MAX_RETRY_MS if len(value) > 8 else min(int(value), MAX_RETRY_MS)
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_event_id = self._id
        if self._retry is not None:
            self.retry_ms = self._retry
        data, self._data = self._data, []
        event, self._event = self._event or "message", ""
        identifier, self._id = self._id, None
        retry, self._retry = self._retry, None
        joined = "\n".join(data)
        if not joined:
            return None  # e.g. the priming event a 2025-11-25 server sends for resumption
        return Event(data=joined, event=event, id=identifier, retry_ms=retry)


def _line_end(text: str, start: int) -> tuple[int, int] | None:
    """Where the first complete line from ``start`` ends and the next begins, if one is complete."""
    lf = text.find("\n", start)
    cr = text.find("\r", start, lf if lf != -1 else len(text))
    if cr == -1:
        return None if lf == -1 else (lf, lf + 1)
    if cr + 1 == len(text):
        return None  # may be the first half of a CRLF split across chunks
    return cr, cr + (2 if text[cr + 1] == "\n" else 1)
