"""Real servers on 127.0.0.1 and a raw-socket client that breaks connections on purpose.

The server writes JSON lines (nr_llm.observability.json_lines) to a file and emails to
a folder; tests read both. Every wait is bounded and every server is stopped by the
context manager that started it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import struct
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.peers import running

WAIT_SECONDS = 15.0
Record = dict[str, Any]


@dataclasses.dataclass
class Server:
    port: int
    log_path: Path
    mail_dir: Path

    def records(self) -> list[Record]:
        if not self.log_path.exists():
            return []
        # Only whole lines: the server may be halfway through writing the last one.
        lines = self.log_path.read_text().split("\n")[:-1]
        return [json.loads(line) for line in lines if line.strip()]

    def wait_for(self, predicate: Callable[[Record], bool], what: str, count: int = 1) -> list[Record]:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            found = [record for record in self.records() if predicate(record)]
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"no {what} within {WAIT_SECONDS:g} s; log: {self.records()!r}")

    def emails(self) -> list[Path]:
        return sorted(self.mail_dir.iterdir())


def command(kind: str) -> list[str]:
    if kind == "uvicorn":
        return [sys.executable, "-m", "tests.observability.uvicorn_serve"]
    worker = {"gunicorn-sync": ["--worker-class", "sync"], "gunicorn-gthread": ["--worker-class", "gthread"]}
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:tests.observability.gunicorn_conf",
        *worker[kind],
        *(["--threads", "4"] if kind == "gunicorn-gthread" else []),
        "tests.observability.servers:wsgi_application",
    ]


@contextlib.contextmanager
def serve(kind: str, tmp: Path, *, bare: bool = False, include_cancelled: bool = False) -> Iterator[Server]:
    log_path = tmp / "server.jsonl"
    mail_dir = tmp / "mail"
    mail_dir.mkdir()
    env = {
        "DJANGO_SETTINGS_MODULE": "tests.observability.server_settings",
        "NR_LLM_TEST_LOG": str(log_path),
        "NR_LLM_TEST_MAIL_DIR": str(mail_dir),
        "NR_LLM_TEST_BARE": "1" if bare else "0",
        "NR_LLM_TEST_SERVER": "asgi" if kind == "uvicorn" else "wsgi",
        "NR_LLM_REQUEST_EVENTS": json.dumps({"include_cancelled": include_cancelled}),
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
    }
    with running(command(kind), env=env) as port:
        yield Server(port, log_path, mail_dir)


def request_head(
    method: str,
    path: str,
    rid: str,
    *,
    length: int | None = None,
    chunked: bool = False,
    content_type: str = "",
    cookie: str = "",
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"X-Request-ID: {rid}"]
    if cookie:
        lines.append(f"Cookie: {cookie}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    if chunked:
        lines.append("Transfer-Encoding: chunked")
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_SECONDS)


def close(sock: socket.socket, how: str) -> None:
    """Close with FIN (an orderly close) or RST (SO_LINGER 0: the connection is reset)."""
    if how == "rst":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def get(server: Server, path: str, rid: str) -> bytes:
    """A complete request, answered in full (Connection: close)."""
    with connect(server) as sock:
        sock.sendall(request_head("GET", path, rid)[:-2] + b"Connection: close\r\n\r\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def admitted(rid: str) -> Callable[[Record], bool]:
    """The server handed the request to the application (test-only outer layer)."""
    return lambda record: record["message"] == f"admitted {rid}"


def in_slow_view(rid: str) -> Callable[[Record], bool]:
    """The demo's own barrier: the slow view is running."""
    return lambda record: record["message"] == f"slow view admitted {rid}"


def access_for(rid: str) -> Callable[[Record], bool]:
    return lambda record: record["logger"] == "nr_llm.access" and record["access"]["request_id"] == rid


def event_for(rid: str) -> Callable[[Record], bool]:
    return lambda record: record["logger"] == "nr_llm.requests" and record["event"]["request_id"] == rid


def mentions(rid: str) -> Callable[[Record], bool]:
    return lambda record: rid in json.dumps(record)


def new_rid() -> str:
    return uuid.uuid4().hex


def fence(server: Server) -> None:
    """A complete request whose event arrives after any event queued before it."""
    rid = new_rid()
    assert get(server, "/demo/slow/?seconds=0", rid).startswith(b"HTTP/1.1 200")
    server.wait_for(event_for(rid), "fence event")


def assert_clean_499(server: Server, rid: str, phase: str, *, since: int = 0) -> Record:
    """One 499 at INFO in ``phase``, and no error, django record, signal or email in the log
    from record ``since`` on (a server shared with tests that log warnings on purpose)."""
    (access,) = server.wait_for(access_for(rid), "access record")
    assert access["level"] == "INFO"
    assert access["access"]["status"] == 499
    assert access["access"]["phase"] == phase
    fence(server)
    records = server.records()[since:]
    assert len([r for r in records if access_for(rid)(r)]) == 1
    errors = [r for r in records if r["level"] in ("ERROR", "CRITICAL")]
    django_records = [r for r in records if r["logger"].startswith("django.")]
    signals = [r for r in records if r["message"].startswith("got_request_exception")]
    assert (errors, django_records, signals) == ([], [], [])
    assert server.emails() == []
    return access
