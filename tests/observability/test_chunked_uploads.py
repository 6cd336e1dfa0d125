"""Chunked JSON uploads (Transfer-Encoding: chunked, no Content-Length) against real servers.

gunicorn (sync and gthread) marks where a chunked body ends (``wsgi.input_terminated``);
under uvicorn Django receives the whole body before the view. Either way ``read_json``
reads it, bounded by its limit, and a client that leaves inside a chunk is one clean 499.
"""

from __future__ import annotations

import pytest

from project.views import ECHO_MAX_BYTES

from .harness import (
    Server,
    access_for,
    admitted,
    assert_clean_499,
    close,
    connect,
    new_rid,
    request_head,
    serve,
)

pytestmark = pytest.mark.e2e

KINDS = ["gunicorn-sync", "gunicorn-gthread", "uvicorn"]


@pytest.fixture(scope="module", params=KINDS)
def server(request, tmp_path_factory):
    """A server per kind, the demo site behind the wrappers and the middleware."""
    with serve(request.param, tmp_path_factory.mktemp(request.param)) as server:
        yield server


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def post_chunked(server: Server, pieces: list[bytes]) -> tuple[str, bytes]:
    """POST ``pieces`` as chunks to the demo echo, read the whole answer (Connection: close)."""
    rid = new_rid()
    head = request_head("POST", "/demo/echo/", rid, chunked=True, content_type="application/json")
    with connect(server) as sock:
        sock.sendall(head[:-2] + b"Connection: close\r\n\r\n")
        for piece in pieces:
            sock.sendall(chunk(piece))
        sock.sendall(b"0\r\n\r\n")
        answer = []
        while data := sock.recv(65536):
            answer.append(data)
    return rid, b"".join(answer)


def test_a_chunked_json_upload_is_read_whole(server):
    """A valid document sent in three chunks is echoed with 200 (it used to be an empty body, 400)."""
    rid, answer = post_chunked(server, [b'{"a"', b": ", b"1}"])
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.endswith(b'{"echo": {"a": 1}}')
    (access,) = server.wait_for(access_for(rid), "access record")
    assert access["access"]["status"] == 200


def test_a_chunked_upload_over_the_limit_is_413(server):
    """One byte past the echo's 64 KiB, in 8 KiB chunks: 413, as a sized body over the limit is."""
    body = b'"' + b"x" * (ECHO_MAX_BYTES - 1) + b'"'
    assert len(body) == ECHO_MAX_BYTES + 1
    rid, answer = post_chunked(server, [body[i : i + 8192] for i in range(0, len(body), 8192)])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert f"larger than {ECHO_MAX_BYTES} bytes".encode() in answer
    (access,) = server.wait_for(access_for(rid), "access record")
    assert (access["level"], access["access"]["status"]) == ("WARNING", 413)


def test_a_chunked_upload_at_the_limit_is_read(server):
    """Exactly 64 KiB in chunks is accepted: the bound is the same as for a sized body."""
    body = b'"' + b"x" * (ECHO_MAX_BYTES - 2) + b'"'
    _, answer = post_chunked(server, [body[i : i + 8192] for i in range(0, len(body), 8192)])
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


# Cut inside a chunk's data, and right after a chunk's data before its CRLF (where gunicorn
# reports a parse error rather than EOF, and the client socket tells the two apart).
CUTS = {"inside-a-chunk": b"100\r\n" + b'{"text": "' + b"x" * 40, "before-a-crlf": b'8\r\n{"a": 1}'}


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("how", ["fin", "rst"])
def test_a_close_mid_chunk_is_one_clean_499(server, how, cut):
    """The client sends part of a chunked body and closes (FIN) or resets (RST) once the
    application has the request: one 499 at INFO in phase request_body, no error record,
    email or signal."""
    since = len(server.records())
    rid = new_rid()
    sock = connect(server)
    head = request_head("POST", "/demo/echo/", rid, chunked=True, content_type="application/json")
    sock.sendall(head + CUTS[cut])
    server.wait_for(admitted(rid), "admission")
    close(sock, how)
    assert_clean_499(server, rid, "request_body", since=since)
