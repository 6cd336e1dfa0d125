"""read_json: 413 over the limit, 400 for invalid JSON, the canonical reason on a mid-stream close."""

from __future__ import annotations

import io

import pytest
from django.core.handlers.wsgi import WSGIRequest
from django.test import RequestFactory

from nr_llm.observability import BodyRejected, ClientDisconnected, DisconnectSignal, read_json
from nr_llm.observability.signal import SIGNAL_KEY
from nr_llm.observability.wsgi import DisconnectAwareInput

from .drivers import wrapped_wsgi, wsgi_call


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
