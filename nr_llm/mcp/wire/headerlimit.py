"""The allowance for an answer's status line and headers, enforced while they are read.

``http.client`` reads the whole header block before anyone sees it, within its own
limits of 100 lines of 64 KiB each: about 6 MB of headers a server may send, which
the client then holds several times over (as lines, as one string, as a parsed
message, as urllib3's and requests' header dicts). The body cap cannot help: it starts
after the headers. So the connection's response class reads the block through a file
that counts every line against the allowance and stops reading past it; nothing beyond
the allowance is ever buffered.
"""

from __future__ import annotations

import http.client
from typing import Any

# Real servers send a few KiB (node's HTTP parser refuses more than 16 KiB in all).
MAX_HEADER_BYTES = 64 * 1024
# The status line, the header lines and the blank line that ends them, interim
# (1xx) answers included.
MAX_HEADER_LINES = 100


class HeaderFlood(Exception):
    """The status line and headers went past the allowance (mapped to ``too_large``).

    Deliberately not an HTTPException or OSError: urllib3 would wrap those as a broken
    connection, and this is not one.
    """


class _Allowance:
    """The response's file while its head is read: each line is counted, and no read goes
    further than one byte past what is left (enough to tell the block is too large)."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp
        self._left = MAX_HEADER_BYTES
        self._lines = 0

    def readline(self, limit: int = -1) -> bytes:
        self._lines += 1
        if self._lines > MAX_HEADER_LINES:
            raise HeaderFlood
        cap = self._left + 1 if limit < 0 else min(limit, self._left + 1)
        line: bytes = self._fp.readline(cap)
        self._left -= len(line)
        if self._left < 0:
            raise HeaderFlood
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fp, name)


class CappedResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading its head within the allowance."""

    # Bytes of the status line and headers read, also when reading them failed: 0 means the
    # connection gave no answer at all (connections.py tells the leg).
    head_bytes = 0

    def begin(self) -> None:
        raw = self.fp
        allowance = _Allowance(raw)
        self.fp = allowance  # type: ignore[assignment]
        try:
            super().begin()
        finally:
            self.head_bytes = MAX_HEADER_BYTES - allowance._left
            # The body is read from the socket's own file, at full speed.
            if self.fp is not None:
                self.fp = raw
