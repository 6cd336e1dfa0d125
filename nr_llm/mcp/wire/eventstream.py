"""An incremental ``text/event-stream`` decoder (the WHATWG rules MCP's transport uses).

Fed the body chunk by chunk as it arrives, so the transport can stop reading the moment
the answer it waits for has been dispatched, even if the server keeps the stream open.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
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
        self._started = False

    def events(self, chunks: Iterable[bytes]) -> Iterator[Event]:
        """Every event of a whole stream, each as soon as its chunk arrives; the stream's
        end counts (a CR ending it may complete the last event)."""
        for chunk in chunks:
            yield from self.feed(chunk)
        yield from self.end()

    def feed(self, chunk: bytes) -> list[Event]:
        decoded = self._text.decode(chunk)
        if not self._started:
            decoded = self._opening(decoded)
        pending = self._pending
        # No line can end in this chunk (no terminator, and no CR waiting for its LF): the
        # common case of a long line trickling in, so it is kept to a few tests.
        if "\n" not in decoded and "\r" not in decoded and not (pending and pending[-1].endswith("\r")):
            if decoded:
                pending.append(decoded)
            return []
        return self._lines(decoded, final=False)

    def end(self) -> list[Event]:
        """The stream closed: what its last bytes complete. A CR held back as possibly half a
        CRLF was a line end after all; a line nothing ended is dropped (WHATWG)."""
        decoded = self._text.decode(b"", final=True)
        if not self._started:
            decoded = self._opening(decoded)
        return self._lines(decoded, final=True)

    def _opening(self, decoded: str) -> str:
        if decoded:
            self._started = True
            # WHATWG: one U+FEFF (a UTF-8 byte order mark) opening the stream is not part of it.
            return decoded.removeprefix("\ufeff")
        return decoded

    def _lines(self, decoded: str, *, final: bool) -> list[Event]:
        pending = self._pending
        text = "".join(pending) + decoded
        held = ""
        if not final and text.endswith("\r"):
            text, held = text[:-1], "\r"  # may be the first half of a CRLF split across chunks
        # All three line ends made one, then one split: a few passes in C whatever the mix,
        # where a search per line for the next LF would scan to the chunk's end on CR-only text.
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        rest = lines.pop()  # after the last line end: the unterminated tail
        events: list[Event] = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        self._pending = [rest + held] if (rest or held) and not final else []
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
