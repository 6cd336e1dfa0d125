"""Hostile HTTP answers, byte for byte, that the adversarial server can give on any leg.

Each shape is garbage in one part of an answer: the status line, the headers, a
redirect's Location or body, the body, or an event stream's ids. The bytes are built
on first use (a few are megabytes) and cached, so importing this module for test
parameters costs nothing.

A shape either closes the connection after its bytes (the default), keeps it open
(``KEEP``: a well-formed 3xx after which a client could reuse the connection), or holds
it silent (``HOLD``: the body it promised never comes).
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable

KEEP = "keep"
HOLD = "hold"
CLOSE = "close"

# The shapes: what used to cost the client tens to hundreds of MiB, or raised an
# exception that was not McpTransportError. Each is measured for memory on every leg.
BIG_BODY_BYTES = 32 << 20
FLOOD_HEADERS = 95
FLOOD_HEADER_BYTES = 65_000

_Builder = Callable[[], bytes]


def _answer(status: str, *headers: str | bytes, body: bytes = b"", length: bool = True) -> bytes:
    lines = [f"HTTP/1.1 {status}".encode()]
    lines += [header.encode("latin-1") if isinstance(header, str) else header for header in headers]
    if length:
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _big_body() -> bytes:
    return _answer("302 Found", "Location: /elsewhere", "Content-Type: text/html", body=b"x" * BIG_BODY_BYTES)


def _gzip_body() -> bytes:
    # 256 gzip members of 1 MiB of zeros each: one valid gzip stream, ~256 KB on the
    # wire, 256 MiB inflated; cheap to build because every member is the same bytes.
    member = gzip.compress(bytes(1 << 20), compresslevel=9)
    return _answer(
        "302 Found",
        "Location: /elsewhere",
        "Content-Type: text/html",
        "Content-Encoding: gzip",
        body=member * 256,
    )


def _header_flood() -> bytes:
    # Each header inside http.client's own limits (100 headers of 64 KiB): 6 MB in all.
    flood = [b"X-Flood-%d: " % n + b"f" * FLOOD_HEADER_BYTES for n in range(FLOOD_HEADERS)]
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    return _answer("200 OK", "Content-Type: application/json", *flood, body=body)


def _stream(text: bytes) -> bytes:
    return _answer("200 OK", "Content-Type: text/event-stream", "Connection: close", body=text, length=False)


_FIXED: dict[str, tuple[_Builder, str]] = {
    # -- redirects: decided from the status line and headers, whatever follows --
    "302-big-body": (_big_body, CLOSE),
    "302-gzip-body": (_gzip_body, CLOSE),
    "302-location-not-utf8": (lambda: _answer("302 Found", b"Location: /\xff"), CLOSE),
    "302-location-bad-ipv6": (lambda: _answer("302 Found", "Location: http://[::1/mcp"), CLOSE),
    "302-location-bad-port": (lambda: _answer("302 Found", "Location: http://127.0.0.1:99999/"), CLOSE),
    "307-promised-body": (
        lambda: b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /elsewhere\r\nContent-Length: 1000\r\n\r\n",
        HOLD,
    ),
    "301-location-huge": (lambda: _answer("301 Moved", "Location: /" + "a" * 60_000), CLOSE),
    "302-no-location": (lambda: _answer("302 Found"), CLOSE),
    "302-two-locations": (lambda: _answer("302 Found", "Location: /a", "Location: http://[::1"), CLOSE),
    "303-bad-chunked": (
        lambda: _answer(
            "303 See Other", "Location: /x", "Transfer-Encoding: chunked", body=b"zz\r\n", length=False
        ),
        CLOSE,
    ),
    "308-scheme-relative": (lambda: _answer("308 Permanent", "Location: //[bad"), CLOSE),
    "303-keep-alive": (lambda: _answer("303 See Other", "Location: /elsewhere", body=b"moved"), KEEP),
    # -- the status line --
    "empty": (lambda: b"", CLOSE),
    "garbage-status": (lambda: b"HTTP/1.1 abc\r\n\r\n", CLOSE),
    "not-http": (lambda: b"\x00\xff\xfe binary noise\r\n\r\n", CLOSE),
    "status-999": (lambda: _answer("999 Whatever"), CLOSE),
    "status-line-huge": (lambda: b"HTTP/1.1 200 " + b"O" * 70_000 + b"\r\n\r\n", CLOSE),
    "continue-flood": (lambda: b"HTTP/1.1 100 Continue\r\n\r\n" * 5000, CLOSE),
    # -- the headers --
    "header-flood": (_header_flood, CLOSE),
    "huge-header": (
        lambda: _answer("200 OK", "Content-Type: application/json", "X-Big: " + "x" * 100_000),
        CLOSE,
    ),
    "many-headers": (lambda: _answer("200 OK", *(f"X-{n}: y" for n in range(150))), CLOSE),
    "nul-header": (lambda: _answer("200 OK", "Content-Type: application/json\x00", body=b"{}"), CLOSE),
    "header-no-colon": (
        lambda: _answer("200 OK", "this is no header", "Content-Type: application/json"),
        CLOSE,
    ),
    "session-id-not-utf8": (
        lambda: _answer("200 OK", "Content-Type: application/json", b"Mcp-Session-Id: \xff\xfe", body=b"{}"),
        CLOSE,
    ),
    "content-type-not-utf8": (lambda: _answer("200 OK", b"Content-Type: \xff/\xfe", body=b"{}"), CLOSE),
    "conflicting-length": (
        lambda: (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2\r\nContent-Length: 20\r\n\r\n{}"
        ),
        CLOSE,
    ),
    "set-cookie-garbage": (
        lambda: _answer(
            "500 Broken",
            b"Set-Cookie: \xff=\xfe; Expires=\xff; Max-Age=" + b"9" * 5000 + b"; Domain=[::1",
            "Set-Cookie: ;;;=;",
        ),
        CLOSE,
    ),
    "folded-header": (lambda: _answer("200 OK", "Content-Type: application/json", " folded-on"), CLOSE),
    # -- the body --
    "bad-chunked": (
        lambda: _answer(
            "200 OK",
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
            body=b"zz\r\n",
            length=False,
        ),
        CLOSE,
    ),
    "short-body": (
        lambda: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
        CLOSE,
    ),
    "bad-gzip": (
        lambda: _answer(
            "200 OK", "Content-Type: application/json", "Content-Encoding: gzip", body=b"not gzip!"
        ),
        CLOSE,
    ),
    "body-not-utf8": (lambda: _answer("200 OK", "Content-Type: application/json", body=b"\xff\xfe{"), CLOSE),
    "body-not-json": (lambda: _answer("200 OK", "Content-Type: application/json", body=b"<html>"), CLOSE),
    # -- event streams and their ids --
    "event-id-not-utf8": (lambda: _stream(b"id: \xff\xfe\nretry: 0\ndata:\n\n"), CLOSE),
    "event-id-huge": (lambda: _stream(b"id: " + b"i" * 100_000 + b"\nretry: 0\ndata:\n\n"), CLOSE),
    "event-id-control": (lambda: _stream(b"id: a\x01\x7fb\x00\nid: c\rretry: 0\ndata:\n\n"), CLOSE),
    "event-retry-huge": (lambda: _stream(b"id: e1\nretry: " + b"9" * 5000 + b"\ndata:\n\n"), CLOSE),
    "event-data-garbage": (lambda: _stream(b"data: \xff\xfe\x00[[[\n\n"), CLOSE),
}

NAMES: tuple[str, ...] = tuple(_FIXED)
# The shapes the issue measured: each is measured for memory, not only for its error.
MEASURED = (
    "302-big-body",
    "302-gzip-body",
    "302-location-not-utf8",
    "302-location-bad-ipv6",
    "302-location-bad-port",
    "307-promised-body",
    "header-flood",
)
REDIRECTS = tuple(name for name in NAMES if name[0] == "3")


def disposition(name: str) -> str:
    return _FIXED[name][1]


@functools.cache
def answer(name: str) -> bytes:
    return _FIXED[name][0]()
