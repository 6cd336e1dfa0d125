"""A thin WSGI wrapper that gives each request a disconnect signal and one completion.

``application = DisconnectAwareWSGI(get_wsgi_application())`` in the site's wsgi.py.

- The input stream never returns a partial body: EOF before Content-Length or a
  connection reset raises one canonical ``ClientDisconnected`` (phase request_body).
- Where the server hands over the client socket (gunicorn's ``gunicorn.socket``), the
  signal can ask it whether the client is still there, the way nginx does: an empty
  non-blocking peek means the peer closed.
- A response the server stops iterating early was abandoned because the client went
  away after the status was sent (phase response).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

from .classify import is_client_disconnect
from .completion import COMPLETION_KEY, Completion
from .signal import SIGNAL_KEY, ClientDisconnected, DisconnectSignal, Phase

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class DisconnectAwareInput:
    """``wsgi.input`` that reads exactly Content-Length bytes or raises the signal's reason."""

    def __init__(self, stream: Any, length: int, signal: DisconnectSignal) -> None:
        self._stream = stream
        self._remaining = length
        self._signal = signal

    def _disconnect(self, cause: BaseException | None) -> NoReturn:
        _body_lost(self._signal, cause)

    def _allowance(self, size: int | None) -> int:
        """Bytes this call may read; raises the reason when the client is already gone."""
        allowed = self._remaining if size is None or size < 0 else min(size, self._remaining)
        if allowed > 0 and self._signal.aborted:
            self._signal.raise_reason()
        return allowed

    def read(self, size: int | None = -1, /) -> bytes:
        wanted = self._allowance(size)
        if wanted <= 0:
            return b""
        chunks: list[bytes] = []
        got = 0
        # A blocking read may return less than asked only at EOF; keep asking so a
        # short read is told apart from a closed connection.
        while got < wanted:
            try:
                data = self._stream.read(wanted - got)
            except ConnectionError as exc:
                self._disconnect(exc)
            if not data:
                self._disconnect(None)
            chunks.append(data)
            got += len(data)
        self._remaining -= got
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def readline(self, size: int | None = -1, /) -> bytes:
        limit = self._allowance(size)
        if limit <= 0:
            return b""
        try:
            line = self._stream.readline(limit)
        except ConnectionError as exc:
            self._disconnect(exc)
        if not line or (len(line) < limit and not line.endswith(b"\n")):
            self._disconnect(None)
        self._remaining -= len(line)
        return bytes(line)

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line


def _body_lost(signal: DisconnectSignal, cause: BaseException | None) -> NoReturn:
    """Abort ``signal`` for a body the client did not deliver and raise its reason."""
    error = ClientDisconnected(
        "the client closed the connection before sending the whole request body"
        if not isinstance(cause, ConnectionError)
        else "the client reset the connection during the request body"
    )
    error.__cause__ = cause
    # A body read once the response has started (a streaming response reading as it
    # goes) is a disconnect after the status was sent: it keeps that status.
    signal.abort(error, Phase.RESPONSE if signal.response_started else Phase.REQUEST_BODY)
    signal.raise_reason()


def read_terminated(stream: Any, limit: int, signal: DisconnectSignal | None) -> bytes:
    """Read a body whose end the server marks itself (``wsgi.input_terminated``: a chunked
    body, no Content-Length) until that end or ``limit`` bytes, whichever comes first.

    A stream that fails part-way is a body the client did not deliver, and with a signal
    that is its reason, never a partial body. gunicorn raises an ``OSError`` (``NoMoreData``)
    at EOF inside a chunk and a ``ConnectionError`` on a reset, but a parse error at EOF
    just before a chunk's CRLF: for any other failure the client socket is asked, and an
    exception the client's departure does not explain is the server's, raised as it is.
    """
    chunks: list[bytes] = []
    got = 0
    while got < limit:
        try:
            data = stream.read(limit - got)
        except Exception as exc:
            if signal is not None and (isinstance(exc, OSError) or signal.check(Phase.REQUEST_BODY)):
                _body_lost(signal, exc)
            raise
        if not data:
            break
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


class _Exchange:
    """One request's traffic with the server: its ``start_response``, then the response.

    Called as ``start_response``, it notes the status on the completion first; iterated,
    it counts the bytes handed to the server; ``close()`` finishes the completion. One
    object instead of two: both are per-request allocations on every request.
    """

    __slots__ = ("_completion", "_exhausted", "_result", "_start_response")

    def __init__(self, start_response: Callable[..., Any], completion: Completion) -> None:
        self._start_response = start_response
        self._completion = completion
        self._result: Iterable[bytes] = ()
        self._exhausted = False

    def __call__(self, status: str, headers: Any, exc_info: Any = None) -> Any:
        completion = self._completion
        completion.status_code = int(status[:3])
        completion.response_started = True
        return self._start_response(status, headers, exc_info)

    def __iter__(self) -> Iterator[bytes]:
        completion = self._completion
        try:
            for chunk in self._result:
                completion.bytes_sent += len(chunk)
                yield chunk
        except Exception as exc:
            # A streaming body that stopped because the client left: end the response
            # here rather than hand the server an error it would log with a traceback.
            # Anything else is the server's to report.
            if is_client_disconnect(exc, completion):
                return
            raise
        self._exhausted = True

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                close()
        finally:
            if not self._exhausted:
                # The server stopped asking for chunks: its write to the client failed.
                self._completion.abort(
                    ClientDisconnected("the server stopped sending the response"), Phase.RESPONSE
                )
            self._completion.finish()


class DisconnectAwareWSGI:
    """Wrap a WSGI application (Django's handler) with the disconnect signal."""

    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        get = environ.get
        path = get("SCRIPT_NAME", "") + get("PATH_INFO", "")
        if not path.isascii():
            # WSGI strings are bytes decoded as latin-1 (PEP 3333); show the real path.
            path = path.encode("latin-1", "replace").decode("utf-8", "replace")
        completion = Completion(
            method=get("REQUEST_METHOD", ""),
            path=path,
            request_id_header=get("HTTP_X_REQUEST_ID"),
            traceparent=get("HTTP_TRACEPARENT"),
            client_socket=get("gunicorn.socket"),
        )
        # One object under both keys: the completion is the request's signal.
        environ[SIGNAL_KEY] = environ[COMPLETION_KEY] = completion
        content_length = get("CONTENT_LENGTH")
        if content_length:
            try:
                length = int(content_length)
            except ValueError:
                length = 0
            if length > 0 and "wsgi.input" in environ:
                environ["wsgi.input"] = DisconnectAwareInput(environ["wsgi.input"], length, completion)
        exchange = _Exchange(start_response, completion)
        try:
            result = self.application(environ, exchange)
        except Exception:
            if completion.status_code is None:
                completion.status_code = 500
            completion.finish()
            raise
        if type(result) is get("wsgi.file_wrapper"):
            # Keep the server's sendfile path: hook close() instead of re-wrapping. Django
            # builds the server's own file_wrapper, so the exact type is the test (and a
            # file_wrapper that is not a class never matches).
            return _hook_close(result, completion)
        exchange._result = result
        return exchange


def _hook_close(result: Any, completion: Completion) -> Iterable[bytes]:
    original = result.close

    def close() -> None:
        try:
            original()
        finally:
            completion.finish()

    try:
        result.close = close
    except AttributeError:
        completion.finish()
    wrapped: Iterable[bytes] = result
    return wrapped
