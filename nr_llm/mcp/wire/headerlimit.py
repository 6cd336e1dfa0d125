"""Cap an answer's status line and headers while they are read: ``http.client`` would
otherwise buffer about 6 MB of them before the body cap starts."""

from __future__ import annotations

import http.client
from typing import Any

# Real servers send a few KiB (node's HTTP parser refuses more than 16 KiB in all).
MAX_HEADER_BYTES = 64 * 1024
# Interim (1xx) answers and the blank line that ends the block count too.
MAX_HEADER_LINES = 100


class HeaderFlood(Exception):
    """Not an HTTPException or OSError: urllib3 would report those as a broken connection."""


class _Allowance:
    """Read at most one byte past what is left: enough to tell the block is too large."""

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

    # 0 when the connection gave no answer at all, even if reading failed.
    head_bytes = 0

    def begin(self) -> None:
        raw = self.fp
        allowance = _Allowance(raw)
        self.fp = allowance  # type: ignore[assignment]
        try:
            super().begin()
        finally:
            self.head_bytes = MAX_HEADER_BYTES - allowance._left
            if self.fp is not None:
                self.fp = raw
