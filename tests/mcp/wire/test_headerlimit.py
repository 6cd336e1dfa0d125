"""The header allowance on a real socket pair: a head that fits is read as http.client
reads any, one that does not is refused, and reading stops at the allowance."""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator

import pytest

from nr_llm.mcp.wire.headerlimit import MAX_HEADER_BYTES, MAX_HEADER_LINES, CappedResponse, HeaderFlood

STATUS = b"HTTP/1.1 200 OK\r\n"
END = b"\r\n"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    theirs.settimeout(10)
    with ours, theirs:
        yield ours, theirs


def _serve(theirs: socket.socket, head: bytes) -> threading.Thread:
    """Write ``head`` and then end the stream, from a thread, as a server would (a head
    larger than the socket's buffer blocks its writer until it is read)."""

    def write() -> None:
        try:
            theirs.sendall(head)
            theirs.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # our side closed first

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _begin(pair: tuple[socket.socket, socket.socket], head: bytes) -> CappedResponse:
    ours, theirs = pair
    writer = _serve(theirs, head)
    response = CappedResponse(ours, method="POST")
    try:
        response.begin()
    finally:
        response.close()
        ours.shutdown(socket.SHUT_RDWR)
        writer.join(10)
    return response


def _head_of(size: int) -> bytes:
    """A head of exactly ``size`` bytes: the status line, one padding header, the blank line."""
    padding = size - len(STATUS) - len(b"X-Pad: \r\n") - len(END)
    return STATUS + b"X-Pad: " + b"p" * padding + b"\r\n" + END


def test_a_head_of_exactly_the_allowance_is_read(pair) -> None:
    """64 KiB to the byte, the blank line included, parses like any answer."""
    response = _begin(pair, _head_of(MAX_HEADER_BYTES))
    assert response.status == 200 and len(response.getheader("X-Pad", "")) > 60_000


def test_one_byte_over_the_allowance_is_a_header_flood(pair) -> None:
    """One byte more than 64 KiB is refused."""
    with pytest.raises(HeaderFlood):
        _begin(pair, _head_of(MAX_HEADER_BYTES + 1))


def test_a_hundred_lines_are_read_and_one_more_is_a_header_flood(pair) -> None:
    """The status line, 98 short headers and the blank line (100 lines) are read; with one
    header more the head is refused as ours, not as http.client's own "more than 100"."""
    fitting = STATUS + b"".join(b"X-%d: y\r\n" % n for n in range(MAX_HEADER_LINES - 2)) + END
    assert _begin(pair, fitting).getheader("X-97") == "y"
    ours, theirs = socket.socketpair()
    with ours, theirs, pytest.raises(HeaderFlood):
        over = STATUS + b"".join(b"X-%d: y\r\n" % n for n in range(MAX_HEADER_LINES - 1)) + END
        _begin((ours, theirs), over)


def test_reading_stops_at_the_allowance(pair) -> None:
    """A 6 MB head of 99 headers of 60,000 bytes (each within http.client's own limits): the
    reader gives up having taken at most the allowance and one buffer of the socket's file
    from the socket; everything else is still there to drain."""
    ours, theirs = pair
    flood = STATUS + b"".join(b"X-%d: " % n + b"f" * 60_000 + b"\r\n" for n in range(99)) + END
    writer = _serve(theirs, flood)
    response = CappedResponse(ours, method="POST")
    with pytest.raises(HeaderFlood):
        response.begin()
    left = 0
    while chunk := ours.recv(1 << 16):
        left += len(chunk)
    writer.join(10)
    response.close()
    assert len(flood) - left <= MAX_HEADER_BYTES + io.DEFAULT_BUFFER_SIZE + 1
