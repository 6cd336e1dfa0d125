"""In-process drivers: Django's real WSGI handler behind the wrapper, and a resetting client."""

from __future__ import annotations

import io
import logging

from django.core.handlers.wsgi import WSGIHandler

from nr_llm.observability.wsgi import DisconnectAwareWSGI


class ResettingStream:
    """A client that sends ``data`` and then resets the connection."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        chunk = self._data.read(size)
        if not chunk:
            raise ConnectionResetError(104, "Connection reset by peer")
        return chunk

    def readline(self, size: int = -1) -> bytes:
        return self.read(size)


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def named(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == name or r.name.startswith(name + ".")]


def wsgi_environ(method: str, path: str) -> dict[str, object]:
    """The keys every WSGI server sets, for a request without a body."""
    return {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
    }


def wsgi_call(
    app: DisconnectAwareWSGI,
    method: str,
    path: str,
    *,
    body: bytes = b"",
    length: int | None = None,
    stream: object | None = None,
    content_type: str = "application/json",
    extra: dict[str, object] | None = None,
    consume: bool = True,
    chunked: bool = False,
) -> tuple[str, bytes]:
    """Call the wrapped handler as a WSGI server would and return (status, body).

    ``chunked``: no Content-Length, ``Transfer-Encoding: chunked`` (the server de-chunks).
    """
    environ = {
        **wsgi_environ(method, path),
        "wsgi.input": stream if stream is not None else io.BytesIO(body),
        "CONTENT_TYPE": content_type,
        **(extra or {}),
    }
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        environ["CONTENT_LENGTH"] = str(len(body) if length is None else length)
    seen: list[str] = []

    def start_response(status, headers, exc_info=None):
        seen.append(status)

    result = app(environ, start_response)
    try:
        content = b"".join(result) if consume else next(iter(result))
    finally:
        result.close()  # type: ignore[attr-defined]
    return seen[0], content


def wrapped_wsgi() -> DisconnectAwareWSGI:
    return DisconnectAwareWSGI(WSGIHandler())
