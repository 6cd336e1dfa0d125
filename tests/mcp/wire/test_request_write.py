"""A request's head goes out with its body's first bytes: one write, not two (watchdog.py)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from nr_llm.mcp.wire.connections import WatchedHTTPConnection


class _Recording:
    """A connected socket's stand-in that records each write (``sendall``) as it comes."""

    def __init__(self, *, fail: bool = False) -> None:
        self.writes: list[bytes] = []
        self.fail = fail

    def sendall(self, data: Any) -> None:
        if self.fail:
            raise BrokenPipeError("the peer went away")
        self.writes.append(bytes(data))

    def settimeout(self, timeout: float | None) -> None:
        pass

    def close(self) -> None:
        pass


def _connection(sock: _Recording) -> WatchedHTTPConnection:
    connection = WatchedHTTPConnection("mcp.example", 80)
    connection.sock = sock  # as if connected: http.client writes to it, never dials
    return connection


def test_a_post_is_written_in_one_write():
    sock = _Recording()
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}'
    _connection(sock).request("POST", "/mcp", body=body, headers={"Content-Type": "application/json"})
    assert len(sock.writes) == 1
    head, sent = sock.writes[0].split(b"\r\n\r\n", 1)
    assert head.startswith(b"POST /mcp HTTP/1.1\r\n") and b"Content-Length: %d" % len(body) in head
    assert sent == body


def test_a_request_without_a_body_sends_its_head_alone():
    sock = _Recording()
    _connection(sock).request("GET", "/mcp", headers={"Accept": "text/event-stream"})
    assert len(sock.writes) == 1 and sock.writes[0].startswith(b"GET /mcp HTTP/1.1\r\n")
    assert sock.writes[0].endswith(b"\r\n\r\n")


def test_a_body_read_from_a_file_keeps_every_byte_in_order():
    """A file body is sent in blocks (urllib3's): the head goes with the first, nothing is lost."""
    sock = _Recording()
    connection = _connection(sock)
    connection.blocksize = 4
    body = b"0123456789"
    connection.request("POST", "/mcp", body=io.BytesIO(body), headers={"Content-Length": str(len(body))})
    written = b"".join(sock.writes)
    assert written.split(b"\r\n\r\n", 1)[1] == body
    assert len(sock.writes) == 3  # head + "0123", "4567", "89"


def test_a_chunked_body_ends_with_its_last_chunk():
    sock = _Recording()
    _connection(sock).request("POST", "/mcp", body=iter([b"ab", b"cd"]), chunked=True)
    written = b"".join(sock.writes)
    assert written.split(b"\r\n\r\n", 1)[1] == b"2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"


def test_the_next_request_on_a_kept_connection_starts_afresh():
    """Nothing of one request's holding is left for the next (a kept-alive connection)."""
    sock = _Recording()
    connection = _connection(sock)
    connection.request("POST", "/mcp", body=b"one")
    connection._HTTPConnection__state = "Idle"  # type: ignore[attr-defined]  # as a read answer leaves it
    connection._HTTPConnection__response = None  # type: ignore[attr-defined]
    connection.request("POST", "/mcp", body=b"two")
    assert [write.split(b"\r\n\r\n", 1)[1] for write in sock.writes] == [b"one", b"two"]


def test_a_write_that_fails_raises_and_leaves_nothing_held():
    sock = _Recording(fail=True)
    connection = _connection(sock)
    with pytest.raises(BrokenPipeError):
        connection.request("POST", "/mcp", body=b"lost")
    assert connection._head is None
