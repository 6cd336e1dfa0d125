"""read_json: 413 over the limit, 400 for invalid JSON, the canonical reason on a mid-stream close;
chunked bodies where the server marks their end, 411 where it does not."""

from __future__ import annotations

import io

import pytest
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory

from nr_llm.observability import BodyRejected, ClientDisconnected, DisconnectSignal, Phase, read_json
from nr_llm.observability.signal import SIGNAL_KEY
from nr_llm.observability.wsgi import DisconnectAwareInput

from .drivers import wrapped_wsgi, wsgi_call, wsgi_environ


def post(body: bytes) -> WSGIRequest:
    return RequestFactory().post("/", data=body, content_type="application/json")


def test_valid_json_is_returned():
    """A whole, valid body parses."""
    assert read_json(post(b'{"a": [1, 2]}'), max_bytes=100) == {"a": [1, 2]}


def test_content_length_over_the_limit_is_413_before_reading():
    """A declared length over the limit is refused without reading the body."""
    request = post(b"[" + b"1," * 100 + b"1]")
    with pytest.raises(BodyRejected) as info:
        read_json(request, max_bytes=50)
    assert info.value.status_code == 413
    assert request._read_started is False  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("declared", "message"),
    [("-5", "Content-Length is negative."), ("ten", "Content-Length is not a number.")],
)
def test_a_declared_length_that_is_not_a_length_is_400_saying_so(declared, message):
    """A negative or non-numeric Content-Length is named as such, not reported as bad JSON."""
    request = post(b"{}")
    request.META["CONTENT_LENGTH"] = declared
    with pytest.raises(BodyRejected) as info:
        read_json(request, max_bytes=100)
    assert (info.value.status_code, str(info.value)) == (400, message)


def test_bytes_over_the_limit_are_413_even_without_a_declared_length():
    """A body already read by someone else and longer than the limit is refused too."""
    request = post(b'"' + b"x" * 100 + b'"')
    assert len(request.body) == 102
    del request.META["CONTENT_LENGTH"]
    with pytest.raises(BodyRejected) as info:
        read_json(request, max_bytes=50)
    assert info.value.status_code == 413


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b""])
def test_invalid_json_is_400(body):
    """Unparseable, undecodable or empty bodies are 400."""
    with pytest.raises(BodyRejected) as info:
        read_json(post(body), max_bytes=100)
    assert info.value.status_code == 400


def test_a_mid_stream_close_raises_the_canonical_reason():
    """EOF before Content-Length raises the signal's own reason object, never a parse of the part."""
    signal = DisconnectSignal()
    request = post(b"")
    request.META[SIGNAL_KEY] = signal
    request.META["CONTENT_LENGTH"] = "100"
    request._stream = DisconnectAwareInput(io.BytesIO(b'{"a": 1}'), 100, signal)  # type: ignore[assignment]
    with pytest.raises(ClientDisconnected) as info:
        read_json(request, max_bytes=1000)
    assert info.value is signal.reason


@pytest.mark.parametrize(
    ("body", "status"), [(b'{"a": 1}', "200 OK"), (b"{oops", "400 Bad Request"), (b"1" * 70_000, "413 ")]
)
def test_the_demo_echo_answers_with_the_precise_status(body, status, site):
    """Through the middleware: 200 with the echo, 400 invalid JSON, 413 over 64 KiB."""
    site.ROOT_URLCONF = "project.urls"
    got, content = wsgi_call(wrapped_wsgi(), "POST", "/demo/echo/", body=body)
    assert got.startswith(status)
    if status == "200 OK":
        assert content == b'{"echo": {"a": 1}}'


class CountingStream(io.BytesIO):
    """A server's de-chunked input that counts what was asked of it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.handed_out = 0

    def read(self, size: int | None = -1, /) -> bytes:
        data = super().read(size)
        self.handed_out += len(data)
        return data


class FailingStream:
    """Hands out ``data``, then fails with ``error`` (the server's reader at a broken chunk)."""

    def __init__(self, data: bytes, error: Exception) -> None:
        self._data = io.BytesIO(data)
        self._error = error

    def read(self, size: int = -1) -> bytes:
        if chunk := self._data.read(size):
            return chunk
        raise self._error

    readline = read


def chunked(
    stream: object, *, terminated: bool = True, signal: DisconnectSignal | None = None
) -> WSGIRequest:
    """A POST as a WSGI server hands over a chunked body: no Content-Length."""
    environ = {
        **wsgi_environ("POST", "/"),
        "CONTENT_TYPE": "application/json",
        "HTTP_TRANSFER_ENCODING": "chunked",
        "wsgi.input": stream,
    }
    if terminated:
        environ["wsgi.input_terminated"] = True
    if signal is not None:
        environ[SIGNAL_KEY] = signal
    return WSGIRequest(environ)


def test_a_chunked_body_is_read_where_the_server_marks_its_end():
    """No Content-Length, wsgi.input_terminated: the body is read from the server's stream to its end."""
    assert read_json(chunked(io.BytesIO(b'{"a": 1}')), max_bytes=100) == {"a": 1}


def test_a_chunked_body_is_bounded_exactly_as_a_sized_one():
    """max_bytes is accepted; one byte more is 413, with at most max_bytes + 1 bytes taken from
    the stream however long the body is."""
    exact = b'"' + b"x" * 98 + b'"'
    assert read_json(chunked(io.BytesIO(exact)), max_bytes=100) == "x" * 98
    stream = CountingStream(b'"' + b"x" * 1_000_000 + b'"')
    with pytest.raises(BodyRejected) as info:
        read_json(chunked(stream), max_bytes=100)
    assert (info.value.status_code, str(info.value)) == (413, "The body is larger than 100 bytes.")
    assert stream.handed_out == 101


def test_a_chunked_body_the_server_does_not_terminate_is_411_saying_so():
    """Without wsgi.input_terminated the end of a chunked body is unknown: 411, naming why, unread."""
    stream = CountingStream(b'{"a": 1}')
    with pytest.raises(BodyRejected) as info:
        read_json(chunked(stream, terminated=False), max_bytes=100)
    assert info.value.status_code == 411
    assert "Content-Length is required" in str(info.value)
    assert "wsgi.input_terminated" in str(info.value)
    assert stream.handed_out == 0


def test_no_length_and_no_transfer_encoding_is_an_empty_body():
    """Neither header: HTTP/1.1 says there is no body, so the stream is not read (it would wait for
    bytes that never come) and the empty body is invalid JSON, 400."""
    request = chunked(FailingStream(b"", AssertionError("read")), terminated=False)
    del request.META["HTTP_TRANSFER_ENCODING"]
    with pytest.raises(BodyRejected) as info:
        read_json(request, max_bytes=100)
    assert info.value.status_code == 400


@pytest.mark.parametrize(
    "error", [OSError("gunicorn NoMoreData"), ConnectionResetError(104, "Connection reset by peer")]
)
def test_a_chunked_body_that_breaks_raises_the_canonical_reason(error):
    """EOF inside a chunk (gunicorn's NoMoreData, an OSError) or a reset aborts the signal in phase
    request_body and raises its reason, chained from the stream's error; nothing is parsed."""
    signal = DisconnectSignal()
    with pytest.raises(ClientDisconnected) as info:
        read_json(chunked(FailingStream(b'{"a": ', error), signal=signal), max_bytes=100)
    assert info.value is signal.reason
    assert info.value.__cause__ is error
    assert signal.phase is Phase.REQUEST_BODY


class ChunkParseError(Exception):
    """What gunicorn raises at EOF between a chunk's data and its CRLF (a parse error)."""


def test_another_stream_failure_is_a_disconnect_only_when_the_socket_says_the_client_left():
    """A non-OSError failure: the client socket is asked; gone, it is the canonical reason in phase
    request_body; still there, the server's exception is raised unchanged."""
    gone = DisconnectSignal(probe=lambda: ClientDisconnected("the client closed the connection"))
    with pytest.raises(ClientDisconnected) as info:
        read_json(chunked(FailingStream(b"{", ChunkParseError()), signal=gone), max_bytes=100)
    assert (info.value, gone.phase) == (gone.reason, Phase.REQUEST_BODY)
    present = DisconnectSignal(probe=lambda: None)
    with pytest.raises(ChunkParseError):
        read_json(chunked(FailingStream(b"{", ChunkParseError()), signal=present), max_bytes=100)
    assert not present.aborted


def test_under_asgi_a_body_without_length_is_read_from_what_django_received():
    """ASGI: Django has the whole body before the view, so a chunked upload reads as any other,
    bounded the same way."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(b"transfer-encoding", b"chunked"), (b"content-type", b"application/json")],
    }
    assert read_json(ASGIRequest(scope, io.BytesIO(b'{"a": 1}')), max_bytes=100) == {"a": 1}
    with pytest.raises(BodyRejected) as info:
        read_json(ASGIRequest(scope, io.BytesIO(b"1" * 101)), max_bytes=100)
    assert info.value.status_code == 413


@pytest.mark.parametrize(
    ("extra", "body", "status"),
    [
        ({"wsgi.input_terminated": True}, b'{"a": 1}', "200 OK"),
        ({"wsgi.input_terminated": True}, b"1" * 70_000, "413 "),
        ({}, b'{"a": 1}', "411 "),
    ],
)
def test_the_demo_echo_answers_a_chunked_upload_with_the_precise_status(extra, body, status, site):
    """Through the wrapper and the middleware: 200 with the echo, 413 over 64 KiB, 411 without
    wsgi.input_terminated."""
    site.ROOT_URLCONF = "project.urls"
    got, content = wsgi_call(wrapped_wsgi(), "POST", "/demo/echo/", body=body, chunked=True, extra=extra)
    assert got.startswith(status)
    if status == "200 OK":
        assert content == b'{"echo": {"a": 1}}'
