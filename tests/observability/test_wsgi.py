"""The WSGI wrapper: a body is read whole or the canonical reason is raised; the socket probe;
a response abandoned by the server keeps its status with phase=response."""

from __future__ import annotations

import io
import socket
from wsgiref.util import FileWrapper

import pytest

from nr_llm.observability import ClientDisconnected, DisconnectSignal, Phase
from nr_llm.observability.liveness import socket_probe
from nr_llm.observability.wsgi import DisconnectAwareInput

from .drivers import ResettingStream, wrapped_wsgi, wsgi_call, wsgi_environ


class Trickle(io.BytesIO):
    """A stream that returns at most 3 bytes per read, as a socket may."""

    def read(self, size: int | None = -1) -> bytes:
        return super().read(3 if size is None or size < 0 else min(size, 3))


def test_short_reads_are_joined_into_the_whole_body():
    """Short reads before EOF are not a disconnect: the caller gets exactly what it asked for."""
    stream = DisconnectAwareInput(Trickle(b"0123456789"), 10, DisconnectSignal())
    assert stream.read(7) == b"0123456"
    assert stream.read() == b"789"
    assert stream.read() == b""


def test_eof_before_content_length_raises_and_never_returns_a_partial_body():
    """EOF before Content-Length raises ClientDisconnected (no cause) and aborts in request_body."""
    signal = DisconnectSignal()
    stream = DisconnectAwareInput(io.BytesIO(b"partial"), 100, signal)
    with pytest.raises(ClientDisconnected) as info:
        stream.read()
    assert info.value is signal.reason
    assert info.value.__cause__ is None
    assert signal.phase is Phase.REQUEST_BODY


def test_a_reset_raises_one_canonical_error_chained_from_the_transport_error():
    """A reset becomes ClientDisconnected from the ConnectionResetError; every later read raises
    that same object."""
    signal = DisconnectSignal()
    stream = DisconnectAwareInput(ResettingStream(b"abc"), 100, signal)
    with pytest.raises(ClientDisconnected) as first:
        stream.read(50)
    assert isinstance(first.value.__cause__, ConnectionResetError)
    with pytest.raises(ClientDisconnected) as second:
        stream.readline()
    assert second.value is first.value is signal.reason
    assert isinstance(second.value.__cause__, ConnectionResetError)


def test_readline_at_eof_mid_body_raises():
    """A line cut off by EOF before Content-Length is a disconnect, not a short line."""
    stream = DisconnectAwareInput(io.BytesIO(b"line one\nline t"), 40, DisconnectSignal())
    assert stream.readline() == b"line one\n"
    with pytest.raises(ClientDisconnected):
        stream.readline()


def test_socket_probe_tells_a_waiting_client_a_pipelined_one_and_a_closed_one_apart():
    """Nothing to read: alive; unread data: alive; EOF: ClientDisconnected."""
    server, client = socket.socketpair()
    with server, client:
        probe = socket_probe(server)
        assert probe is not None
        assert probe() is None
        client.sendall(b"GET /next HTTP/1.1\r\n")
        assert probe() is None
        assert server.recv(100)
        client.close()
        assert isinstance(probe(), ClientDisconnected)


def test_no_probe_without_a_plain_socket():
    """Servers that do not hand over their socket get no probe (the signal stays passive)."""
    assert socket_probe(None) is None
    assert socket_probe(object()) is None


def test_a_response_the_server_abandons_keeps_its_status_with_phase_response(site, logs):
    """The server stopping after the first chunk (its write failed) is a disconnect in phase
    response; the access record keeps the 200 that was already sent."""
    status, first = wsgi_call(wrapped_wsgi(), "GET", "/streams/", consume=False)
    assert (status, first) == ("200 OK", b"first chunk ")
    (access,) = logs.named("nr_llm.access")
    assert access.levelname == "INFO"
    assert (access.nr_llm_access["status"], access.nr_llm_access["phase"]) == (200, "response")
    assert access.nr_llm_access["bytes"] == len(first)


def test_a_complete_response_counts_its_bytes_and_has_no_phase(site, logs):
    """A response iterated to the end is one plain completion with its byte count."""
    status, body = wsgi_call(wrapped_wsgi(), "GET", "/streams/")
    assert status == "200 OK"
    (access,) = logs.named("nr_llm.access")
    assert access.nr_llm_access["bytes"] == len(body) == len(b"first chunk second chunk")
    assert "phase" not in access.nr_llm_access


def test_a_non_ascii_path_is_recorded_as_the_client_sent_it(site, logs):
    """WSGI hands over UTF-8 path bytes decoded as latin-1; the access record shows the real
    path, and an ASCII path is recorded unchanged."""
    app = wrapped_wsgi()
    wsgi_call(app, "GET", "/caf\u00e9/".encode().decode("latin-1"))
    wsgi_call(app, "GET", "/plain/")
    paths = [record.nr_llm_access["path"] for record in logs.named("nr_llm.access")]
    assert paths == ["/caf\u00e9/", "/plain/"]


def test_a_disconnect_raised_while_streaming_ends_the_response_quietly(site, logs, signals_sent):
    """A streaming body that stops with the signal's reason ends the response instead of
    raising into the server (which would log it as an error with a traceback); the access
    record keeps the sent 200 with phase response."""
    status, body = wsgi_call(wrapped_wsgi(), "GET", "/streams-until-gone/")
    assert (status, body) == ("200 OK", b"first chunk ")
    (access,) = logs.named("nr_llm.access")
    assert access.levelname == "INFO"
    assert (access.nr_llm_access["status"], access.nr_llm_access["phase"]) == (200, "response")
    assert logs.named("django") == [] and signals_sent == []


@pytest.mark.parametrize(("probe_after_ns", "status"), [(10**12, "200 OK"), (0, "499 Client Closed Request")])
def test_the_closing_liveness_check_runs_only_after_a_view_that_took_a_while(
    site, logs, monkeypatch, probe_after_ns, status
):
    """The client has closed its socket while the view ran. A request younger than
    PROBE_AFTER_NS is not asked about (no system call on a sub-millisecond request) and keeps
    its 200; one past it is asked and completes as 499. The threshold is moved instead of
    waiting: no real time passes."""
    monkeypatch.setattr("nr_llm.observability.middleware.PROBE_AFTER_NS", probe_after_ns)
    server, client = socket.socketpair()
    with server, client:
        client.close()
        seen, _ = wsgi_call(wrapped_wsgi(), "GET", "/ok/", extra={"gunicorn.socket": server})
    assert seen == status
    (access,) = logs.named("nr_llm.access")
    assert access.nr_llm_access["status"] == int(status[:3])


def test_a_body_read_after_the_response_started_keeps_the_status_with_phase_response(site, logs):
    """A streaming response that reads the (truncated) body after its first chunk: the
    disconnect happened after the status was sent, so the record keeps 200, phase response."""
    status, content = wsgi_call(wrapped_wsgi(), "POST", "/streams-then-reads/", body=b"{", length=100)
    assert (status, content) == ("200 OK", b"first chunk ")
    (access,) = logs.named("nr_llm.access")
    assert (access.nr_llm_access["status"], access.nr_llm_access["phase"]) == (200, "response")


def test_a_file_response_keeps_the_servers_file_wrapper_and_completes_on_close(site, logs):
    """Django hands a FileResponse to the server's wsgi.file_wrapper (its sendfile path): the
    wrapper returns that object itself, not an iterator around it, and the request completes
    when the server closes it, once."""
    environ = {**wsgi_environ("GET", "/file/"), "wsgi.file_wrapper": FileWrapper}
    statuses: list[str] = []
    result = wrapped_wsgi()(environ, lambda status, headers, exc_info=None: statuses.append(status))
    assert type(result) is FileWrapper
    assert b"".join(result) == b"file body"
    assert logs.named("nr_llm.access") == []  # not before the server closes it
    result.close()
    (access,) = logs.named("nr_llm.access")
    assert (statuses, access.nr_llm_access["status"]) == (["200 OK"], 200)
