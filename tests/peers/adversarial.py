"""An MCP server that misbehaves on purpose, for the client's wall-clock tests.

``python -m tests.peers.adversarial`` binds 127.0.0.1 on an OS-chosen port and prints
``PORT <n>``. The first path segment picks the misbehaviour, the second its seconds;
``/fine/0/mcp`` is a well-behaved stateless server with one ``echo`` tool:

    slow-init/S       initialize answers after S seconds
    slow-work/S       tools/call answers after S seconds
    late-stuck/S      initialize answers after S seconds, tools/call never (within a minute)
    slow-pages/S      tools/list: 50 pages, each after S seconds
    trickle/S         tools/call: headers, then one body byte every S seconds
    slow-headers/S    tools/call: the status line and headers one byte every S seconds
    silence/S         tools/call: headers promising a body, then nothing for S seconds
    keepalive/S       tools/call: an event stream of keep-alive comments every S seconds
    endless/0         tools/call: an endless JSON body, as fast as the client reads
    drop/S            tools/call: an event stream that offers resumption (event id, retry
                      S seconds) and closes before the answer; ``GET`` with that
                      Last-Event-ID then streams the answer
    slow-delete/S     well-behaved, with sessions, but DELETE answers after S seconds
    drop-unicode/0    tools/call: like drop, but the event id is no ASCII (no header can carry it)
    gzip-bomb/0       tools/call: Content-Encoding gzip (never asked for) inflating to 64 MiB
    leg/LEG/SHAPE     well-behaved, with sessions, except on one leg (``initialize``,
                      ``notification``, ``work``, ``resume``: the GET after a work stream
                      that closed early offering resumption, or ``delete``), which gets the
                      raw bytes of ``hostile_wire.answer(SHAPE)``; any further segments
                      before ``mcp`` are free (a test's own tag). ``GET /seen`` lists every
                      request (with how many its connection has carried, this one
                      included, and which connection it was), each serving of the shape, and
                      any request a client sent on a connection held silent after a shape
                      (``reused``)
    record/0          well-behaved, with sessions; remembers each request's session id and
                      credential headers, served as JSON by ``GET /seen`` (not MCP), as
                      for every GET and every request of the scenarios in ``REMEMBERED``
    tattle/0          answers every request with a JSON-RPC error quoting the credential
                      it was sent, as a careless server's "invalid token ..." does
    slow-discover/S   a 2026-07-28 server whose server/discover answers after S seconds
    trickle-discover/S  server/discover: headers, then one body byte every S seconds
    modern-slow-work/S  a 2026-07-28 server (discover at once) whose tools/call answers after S s
    once/ERA/SHAPE    exactly once: every tools/call the server runs is noted (``ran`` in
                      ``GET /seen``), then answered by SHAPE. ERA ``handshake`` is an old
                      server with sessions; ``modern`` answers the FIRST server/discover of its
                      path as a 2026-07-28 server and every later one as an old server (mixed
                      backends in a rolling deploy), and speaks the handshake too. SHAPE:
                      ``resume-404``, ``resume-405``, ``resume-stall``, ``resume-broken`` (the
                      stream closes after an event id; the resumption GET is answered 404, 405,
                      never, or 200 cut off mid-body), ``no-id`` (the stream closes, no event
                      id), ``broken-body`` (200 JSON cut off mid-body), ``unanswered`` (the
                      connection closes with no status line); ``refuse-32601``,
                      ``refuse-32022``, ``refuse-400``, ``refuse-nocode`` refuse a 2026-era
                      tools/call before running it (200 with -32601, 400 with -32022, a bare
                      400, 400 with an error object that has no code; ``refuse-nocode-404``
                      and ``-405`` at that status, -405's code a string) and run a handshake-era
                      one; ``progress-error`` runs it and answers a 200 event stream: a progress
                      notification, then a -32602 error. Further segments before ``mcp`` are
                      free (a test's tag)
    leftover/SHAPE    a 2026-07-28 server whose tools/call answer is followed by a forged answer
                      (to id 1) on the same connection: ``pending`` sends the head, then the body
                      and the forgery in one TLS record; ``buffered`` all in one write.
                      ``leftover/victim`` answers its tools/call as it should
    bad-session/0     initialize answers a whole, kept-alive answer whose session id has spaces
    tenant/0          answers server/discover as a 2026-07-28 server only for ``?tenant=a``;
                      every other query gets an old server
    idle-close/S      a 2026-07-28 server noting every tools/call it runs (``ran``); closes a
                      kept-alive connection that stays idle S seconds after an answer, as a
                      server's keep-alive timeout does
    reset-reused/0    a 2026-07-28 server, well-behaved on a connection's first request; any
                      later request on the same connection is read whole, noted (``reset``, and
                      ``ran`` for a tools/call: it may have run) and answered by a TCP reset

Every other scenario answers server/discover like an old server that answers everything:
a result listing no revision.

``python -m tests.peers.adversarial --tls-trickle`` is no HTTP server at all: it answers
a TLS ClientHello with the header of a 16 KiB handshake record and then one byte of it
every 0.2 s, so a TLS handshake never completes and no socket wait ever times out.
``--tls-stall`` reads the ClientHello and then says nothing at all.

``python -m tests.peers.adversarial --certfile F --keyfile K --log PATH`` serves all of the
above over TLS with that certificate (a certificate for another name, from an untrusted
issuer, expired, or valid only for 127.0.0.1: whatever the test issued). Each connection's
handshake runs on its own thread; PATH receives one JSON line per ClientHello
(``{"sni": name}``, null without SNI) and per HTTP request that arrived (``{"request":
method, "path": path}``), so a test can tell that a client refused before sending anything.

Every sleep is bounded (a handler gives up after ``LIMIT_SECONDS``) and a write to a
client that left ends the handler, so nothing outlives the test that started it.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import itertools
import json
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.peers.hostile_wire import HOLD, KEEP, answer, disposition

LIMIT_SECONDS = 60.0
# The once/modern paths whose server/discover was answered as a 2026-07-28 server already.
DISCOVERED: set[str] = set()
MODERN_SCENARIOS = frozenset(
    {"slow-discover", "trickle-discover", "modern-slow-work", "idle-close", "reset-reused", "leftover"}
)
PAGES = 50
SEEN: list[dict[str, str | None]] = []
SESSIONS = itertools.count(1)
CONNECTIONS = itertools.count(1)
# The scenarios whose every request ``GET /seen`` lists (of the others, only their GETs).
REMEMBERED = (
    "/record/",
    "/leg/",
    "/once/",
    "/tenant/",
    "/idle-close/",
    "/reset-reused/",
    "/trickle/",
    "/endless/",
)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    session_header = ""
    # Requests this connection has carried: a client that reuses a connection it should
    # have dropped shows up as a second request on it.
    carried = 0

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a test peer speaks only when it fails

    def handle_one_request(self) -> None:
        self.carried += 1
        super().handle_one_request()

    def do_DELETE(self) -> None:
        self._remember("DELETE")
        if self._hostile("delete"):
            return
        if self.path.startswith("/slow-delete/"):
            time.sleep(min(float(self.path.split("/")[2]), LIMIT_SECONDS))
            self._send(200, b"", "text/plain")
            return
        self._send(200 if self.path.startswith("/record/") else 405, b"", "text/plain")

    def do_GET(self) -> None:
        if self.path == "/seen":
            self._send(200, json.dumps(SEEN).encode(), "application/json")
            return
        self._remember("GET")
        if self._hostile("resume"):
            return
        if self.path.startswith("/once/") and self.headers.get("Last-Event-ID"):
            self._once_resume(self.path.split("/")[3])
            return
        resumed = self.headers.get("Last-Event-ID", "")
        if self.path.startswith("/drop/") and resumed.startswith("call-"):
            body = {"id": int(resumed.removeprefix("call-"))}
            event = b"id: answer\ndata: " + _encode(body, {"content": [{"type": "text", "text": "resumed"}]})
            self._send(200, event + b"\n\n", "text/event-stream")
            return
        self._send(405, b"", "text/plain")

    def setup(self) -> None:
        super().setup()
        # Which connection carried a request: a client must never send on one it should have closed.
        self.number = str(next(CONNECTIONS))

    def _remember(self, method: str) -> None:
        if self.path.startswith(REMEMBERED) or method == "GET":
            names = ("Mcp-Session-Id", "Authorization", "X-Api-Key", "Last-Event-ID", "MCP-Protocol-Version")
            headers = {name: self.headers.get(name) for name in names}
            carried = {"carried": str(self.carried), "connection": self.number}
            SEEN.append({"method": method, "path": self.path, **carried, **headers})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        parts = self.path.strip("/").split("/")
        scenario, seconds = parts[0], _seconds(parts)
        method = body.get("method")
        self._remember(f"POST {method}")
        leg = "initialize" if method == "initialize" else "work" if "id" in body else "notification"
        if method == "server/discover":
            leg = "probe"  # the era probe: answered as an old server does (below), never hostile
        if self._hostile(leg):
            return
        if scenario == "reset-reused" and self.carried > 1:
            self._reset(method)
            return
        if scenario in ("idle-close", "reset-reused") and method == "tools/call":
            SEEN.append({"method": "ran", "path": self.path})
        if scenario == "idle-close":
            # The wait for this connection's next request ends after S seconds: then it closes.
            self.connection.settimeout(min(seconds, LIMIT_SECONDS))
        if leg == "work" and parts[:2] == ["leg", "resume"]:
            # Closed before the answer, offering a way back in: the GET is the hostile leg.
            self._head(200, "text/event-stream", None)
            self._write(b"id: resume-1\nretry: 0\ndata:\n\n")
            return
        if "id" not in body:
            self._send(202, b"", "text/plain")
            return
        if scenario == "tattle":
            sent = self.headers.get("Authorization") or self.headers.get("X-Api-Key") or ""
            error = {"code": -32001, "message": f"invalid credential {sent}"}
            self._send(
                200,
                json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode(),
                "application/json",
            )
            return
        if method == "server/discover" and scenario in MODERN_SCENARIOS:
            self._discover(body, scenario, seconds)
            return
        if method == "server/discover" and self._speaks_modern(scenario, parts):
            self._discover(body, scenario, seconds)
            return
        if method == "tools/call" and scenario == "once":
            self._once_call(body, parts[2])
            return
        if method == "tools/call" and scenario == "leftover" and parts[1] != "victim":
            self._leftover(body, parts[1])
            return
        if method == "tools/call" and scenario == "modern-slow-work":
            time.sleep(min(seconds, LIMIT_SECONDS))
        if method == "initialize":
            if scenario in ("slow-init", "late-stuck"):
                time.sleep(min(seconds, LIMIT_SECONDS))
            if scenario in ("record", "slow-delete", "leg", "once"):
                self.session_header = f"{self.server.server_address[1]}-{next(SESSIONS)}"  # type: ignore[index]
            if scenario == "bad-session":
                self.session_header = "not a visible id"  # spaces: no session id may carry them
            self._result(
                body,
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "adversarial", "version": "0"},
                },
            )
        elif method == "tools/list":
            self._page(body, scenario, seconds)
        elif method == "tools/call":
            self._call(body, scenario, seconds)
        else:
            self._result(body, {})

    def _reset(self, method: str | None) -> None:
        """The request was read; answer nothing and reset the connection (SO_LINGER 0)."""
        SEEN.append({"method": "reset", "path": self.path})
        if method == "tools/call":
            SEEN.append({"method": "ran", "path": self.path})
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        # Nothing is written on the closed socket when the handler winds down.
        self.wfile = io.BytesIO()
        self.close_connection = True

    def _speaks_modern(self, scenario: str, parts: list[str]) -> bool:
        if scenario == "tenant":
            return "tenant=a" in self.path.partition("?")[2].split("&")
        if scenario != "once" or parts[1] != "modern" or self.path in DISCOVERED:
            return False
        DISCOVERED.add(self.path)
        return True

    def _once_call(self, body: dict[str, Any], shape: str) -> None:
        """A tools/call of once/ERA/SHAPE: refused before running, or run (noted) and answered by SHAPE."""
        params = body.get("params") or {}
        modern = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
        if modern and shape.startswith("refuse-"):
            SEEN.append({"method": "refused", "path": self.path})
            if shape == "refuse-400":
                self._send(400, b"Bad Request: Missing session ID", "text/plain")
                return
            if shape.startswith("refuse-nocode"):
                # refuse-nocode-404: that status; the code absent, or (at 405) not an integer.
                status = int(shape.rpartition("-")[2]) if shape[-1].isdigit() else 400
                error: dict[str, Any] = {"message": "Bad Request: no session"}
                if status == 405:
                    error["code"] = "-32601"
                refusal = {"jsonrpc": "2.0", "id": body["id"], "error": error}
                self._send(status, json.dumps(refusal).encode(), "application/json")
                return
            code, status = (-32601, 200) if shape == "refuse-32601" else (-32022, 400)
            error = {"code": code, "message": "no", "data": {"supported": ["2025-11-25"]}}
            self._send(
                status,
                json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode(),
                "application/json",
            )
            return
        SEEN.append({"method": "ran", "path": self.path})
        answer = _encode(body, {"content": [{"type": "text", "text": "done"}]})
        if shape.startswith("resume-"):
            self._head(200, "text/event-stream", None)
            self._write(f"id: call-{body['id']}\nretry: 0\ndata:\n\n".encode())
        elif shape == "no-id":
            self._head(200, "text/event-stream", None)
            self._write(b": the answer never comes\n\n")
        elif shape == "broken-body":
            self._head(200, "application/json", len(answer))
            self._write(answer[: len(answer) // 2])
            self.close_connection = True
        elif shape == "unanswered":
            self.close_connection = True  # not a byte of an answer: no status line at all
        elif shape == "progress-error":
            # The tool is running (a progress notification), then it fails with a JSON-RPC error.
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            error = {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32602, "message": "bad input"}}
            self._head(200, "text/event-stream", None)
            self._write(f"data: {json.dumps(progress)}\n\ndata: {json.dumps(error)}\n\n".encode())
        else:
            self._send(200, answer, "application/json")

    def _leftover(self, body: dict[str, Any], shape: str) -> None:
        """A whole answer, then a forged one for the next request on this connection (id 1)."""
        answer = _encode(body, {"content": [{"type": "text", "text": "done"}]})
        forged = _encode({"id": 1}, {"content": [{"type": "text", "text": "forged"}]})
        extra = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(
            forged
        )
        if shape == "pending":
            # The head in a TLS record of its own; the body and the forgery in the next one, which
            # the client decrypts whole while reading the body: the rest stays in its TLS layer.
            self._head(200, "application/json", len(answer))
            self._write(answer + extra + forged)
        else:  # buffered: all in one write, read ahead with the head into the client's buffer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self._headers_buffer.append(b"\r\n" + answer + extra + forged)  # type: ignore[attr-defined]
            self.flush_headers()

    def _once_resume(self, shape: str) -> None:
        if shape in ("resume-404", "resume-405"):
            self._send(int(shape.removeprefix("resume-")), b"", "text/plain")
        elif shape == "resume-stall":
            time.sleep(LIMIT_SECONDS)
        else:  # resume-broken: a stream promising more than it sends
            self._head(200, "text/event-stream", 4096)
            self._write(b": resumed, then cut\n\n")
            self.close_connection = True

    def _discover(self, body: dict[str, Any], scenario: str, seconds: float) -> None:
        result = {
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
        }
        answer = _encode(body, result)
        if scenario == "slow-discover":
            time.sleep(min(seconds, LIMIT_SECONDS))
        elif scenario == "trickle-discover":
            self._head(200, "application/json", len(answer) + 10_000)
            self._drip(b" " * 10_000 + answer, seconds)
            return
        self._send(200, answer, "application/json")

    def _page(self, body: dict[str, Any], scenario: str, seconds: float) -> None:
        cursor = (body.get("params") or {}).get("cursor")
        index = int(cursor) if cursor else 0
        if scenario == "slow-pages":
            time.sleep(min(seconds, LIMIT_SECONDS))
        page: dict[str, Any] = {"tools": [{"name": f"tool_{index}", "inputSchema": {"type": "object"}}]}
        if scenario == "slow-pages" and index + 1 < PAGES:
            page["nextCursor"] = str(index + 1)
        self._result(body, page)

    def _call(self, body: dict[str, Any], scenario: str, seconds: float) -> None:
        answer = _encode(body, {"content": [{"type": "text", "text": "done"}]})
        if scenario == "slow-work":
            time.sleep(min(seconds, LIMIT_SECONDS))
        elif scenario == "late-stuck":
            time.sleep(LIMIT_SECONDS)
        elif scenario == "trickle":
            self._head(200, "application/json", len(answer) + 10_000)
            self._drip(b" " * 10_000 + answer, seconds)
            return
        elif scenario == "slow-headers":
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Padding: {'x' * 500}\r\n"
            self._drip(head.encode(), seconds)
            return
        elif scenario == "silence":
            self._head(200, "application/json", len(answer))
            time.sleep(min(seconds, LIMIT_SECONDS))
            self._write(answer)
            return
        elif scenario == "keepalive":
            self._head(200, "text/event-stream", None)
            self._drip(b": keep-alive\n\n" * 1000, seconds, step=len(b": keep-alive\n\n"))
            return
        elif scenario == "drop":
            self._head(200, "text/event-stream", None)
            self._write(f"id: call-{body['id']}\nretry: {int(seconds * 1000)}\ndata:\n\n".encode())
            return
        elif scenario == "drop-unicode":
            self._head(200, "text/event-stream", None)
            self._write("id: \u4e16-call\nretry: 0\ndata:\n\n".encode())
            return
        elif scenario == "gzip-bomb":
            bomb = _gzip_bomb()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(bomb)))
            self.end_headers()
            self._write(bomb)
            return
        elif scenario == "endless":
            self._head(200, "application/json", None)
            self._write(b'{"jsonrpc":"2.0","id":' + str(body["id"]).encode() + b',"result":{"content":"')
            chunk = b"x" * 65536
            started = time.monotonic()
            while time.monotonic() - started < LIMIT_SECONDS and self._write(chunk):
                pass
            return
        self._send(200, answer, "application/json")

    def _hostile(self, leg: str) -> bool:
        """Answer with the scenario's shape if this request is its leg; False otherwise."""
        parts = self.path.strip("/").split("/")
        if parts[0] != "leg" or len(parts) < 3 or parts[1] != leg:
            return False
        shape = parts[2]
        SEEN.append({"method": "served", "path": self.path, "served": shape})
        written = self._write(answer(shape))
        if written and disposition(shape) == HOLD:
            self._hold(shape)
        if disposition(shape) != KEEP:
            self.close_connection = True
        return True

    def _hold(self, shape: str) -> None:
        """Send nothing more until the client leaves (bounded); note any request it sends here."""
        self.connection.settimeout(LIMIT_SECONDS)
        try:
            more = self.connection.recv(4096)
        except OSError:
            return
        if more:
            SEEN.append({"method": "reused", "path": self.path, "served": shape})

    def _result(self, body: dict[str, Any], result: dict[str, Any]) -> None:
        self._send(200, _encode(body, result), "application/json")

    def _head(self, status: int, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if self.session_header:
            self.send_header("Mcp-Session-Id", self.session_header)
            self.session_header = ""
        if length is None:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()

    def _send(self, status: int, payload: bytes, content_type: str) -> None:
        self._head(status, content_type, len(payload))
        self._write(payload)

    def _drip(self, payload: bytes, seconds: float, step: int = 1) -> None:
        started = time.monotonic()
        for offset in range(0, len(payload), step):
            if time.monotonic() - started > LIMIT_SECONDS or not self._write(payload[offset : offset + step]):
                return
            time.sleep(seconds)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return False
        return True


@functools.cache
def _gzip_bomb() -> bytes:
    # 64 gzip members of 1 MiB each (a valid gzip stream): cheap to build, 64 MiB inflated.
    prefix = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"'
    mebibyte = gzip.compress(b"x" * (1 << 20), compresslevel=9)
    return gzip.compress(prefix, compresslevel=9) + mebibyte * 64


def _seconds(parts: list[str]) -> float:
    """A scenario's seconds; 0 for a scenario whose second segment is a name."""
    try:
        return float(parts[1]) if len(parts) > 1 else 0.0
    except ValueError:
        return 0.0


def _encode(body: dict[str, Any], result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()


class TlsTrickle(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(LIMIT_SECONDS)
        with contextlib.suppress(OSError):
            self.request.recv(4096)  # the ClientHello
            self.request.sendall(b"\x16\x03\x03\x40\x00")  # a handshake record of 16 KiB follows...
            started = time.monotonic()
            while time.monotonic() - started < LIMIT_SECONDS:
                self.request.sendall(b"\x02")  # ...one byte at a time
                time.sleep(0.2)


class TlsStall(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.settimeout(LIMIT_SECONDS)
        with contextlib.suppress(OSError):
            self.request.recv(4096)  # the ClientHello, never answered
            self.request.recv(4096)  # until the client leaves (or the minute is up)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that cut the connection (the point of most scenarios) is not a failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Log:
    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()

    def note(self, entry: dict[str, Any]) -> None:
        with self._lock, open(self._path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")


class TlsHandler(Handler):
    log: _Log

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            self.log.note({"request": self.command, "path": self.path})
        return parsed


class TlsServer(Server):
    """``Handler`` over TLS, each handshake on the connection's own thread."""

    def __init__(self, certfile: str, keyfile: str, log: _Log) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certfile, keyfile)
        self.context.sni_callback = lambda _sock, name, _context: log.note({"sni": name})
        handler = type("LoggedTlsHandler", (TlsHandler,), {"log": log})
        super().__init__(("127.0.0.1", 0), handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(LIMIT_SECONDS)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except OSError:
            return  # the client refused the certificate (the point of most TLS scenarios) or left
        with tls:
            tls.settimeout(None)
            self.RequestHandlerClass(tls, client_address, self)  # type: ignore[arg-type]

    def shutdown_request(self, request: Any) -> None:
        # The TLS socket took the descriptor over (the plain one is detached) and closed it.
        with contextlib.suppress(OSError):
            if request.fileno() >= 0:
                request.shutdown(socket.SHUT_WR)
        request.close()


# Handshakes that never finish: no HTTP server behind them at all.
RAW_TLS: dict[str, type[socketserver.BaseRequestHandler]] = {
    "--tls-stall": TlsStall,
    "--tls-trickle": TlsTrickle,
}


def _option(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main() -> None:
    certfile, keyfile, log = _option("--certfile"), _option("--keyfile"), _option("--log")
    if certfile and keyfile and log:
        secure = TlsServer(certfile, keyfile, _Log(log))
        print(f"PORT {secure.server_address[1]}", flush=True)
        secure.serve_forever(poll_interval=0.2)
        return
    raw = [handler for flag, handler in RAW_TLS.items() if flag in sys.argv]
    if raw:
        tcp = socketserver.ThreadingTCPServer(("127.0.0.1", 0), raw[0])
        tcp.daemon_threads = True
        print(f"PORT {tcp.server_address[1]}", flush=True)
        tcp.serve_forever(poll_interval=0.2)
        return
    server = Server(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
