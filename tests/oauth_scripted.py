"""Small scripted OAuth parties on real sockets (127.0.0.1), for tests that must say exactly
what reached which party: an authorization server whose metadata, token endpoint and
revocation a test scripts, a protected resource's metadata, an MCP endpoint's challenge.

A ``Peer`` is one origin: a threading HTTP server answering the routes a test gives it and
recording every request (method, path, headers, form). ``authorization_server`` scripts a
peer as an authorization server with a ``TokenEndpoint`` that counts what it is asked,
can take its time, and rotates refresh tokens. Everything is closed on exit.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from nr_llm.mcp import ConnectionSettings
from nr_llm.mcp.oauth import OAuthSettings, OperationTokens
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str] = field(repr=False)
    form: dict[str, str] = field(repr=False)


Reply = tuple[int, dict[str, str], Any]
Handler = Callable[[Seen], Reply]


class Peer:
    """One origin on 127.0.0.1 answering scripted routes, ``(method, path)`` → handler."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], Handler] = {}
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        peer = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
                pass

            def do_GET(self) -> None:
                peer._serve(self)

            def do_POST(self) -> None:
                peer._serve(self)

            def do_DELETE(self) -> None:
                peer._serve(self)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.origin + path

    def route(self, method: str, path: str, reply: Handler | Reply) -> None:
        self.routes[(method, path)] = reply if callable(reply) else _always(reply)

    def requests(self, path: str | None = None, method: str | None = None) -> list[Seen]:
        with self._lock:
            return [
                seen
                for seen in self.seen
                if (path is None or seen.path == path) and (method is None or seen.method == method)
            ]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _serve(self, handler: http.server.BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length).decode() if length else ""
        kind = handler.headers.get("Content-Type", "")
        seen = Seen(
            handler.command,
            urlsplit(handler.path).path,
            dict(handler.headers),
            dict(parse_qsl(raw)) if "form" in kind else {},
        )
        with self._lock:
            self.seen.append(seen)
        route = self.routes.get((seen.method, seen.path))
        status, scripted, body = route(seen) if route is not None else (404, {}, {"error": "not_found"})
        headers = dict(scripted)
        payload = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body))
        data = payload.encode() if isinstance(payload, str) else payload
        handler.send_response(status)
        handler.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def _always(reply: Reply) -> Handler:
    def answer(seen: Seen) -> Reply:
        return reply

    return answer


@contextlib.contextmanager
def peer() -> Iterator[Peer]:
    started = Peer()
    try:
        yield started
    finally:
        started.close()


class TokenEndpoint:
    """Issues ``access-N`` and, but for client credentials, ``refresh-N`` (a new refresh token
    each time: rotation), after ``delay`` seconds; every request's form is kept in ``forms``."""

    def __init__(self, *, delay: float = 0.0, lifetime: int = 3600, token_type: str = "Bearer") -> None:
        self.delay = delay
        self.lifetime = lifetime
        self.token_type = token_type
        self.forms: list[dict[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, seen: Seen) -> Reply:
        with self._lock:
            self.forms.append(seen.form)
            n = len(self.forms)
        time.sleep(self.delay)
        body: dict[str, Any] = {"access_token": f"access-{n}", "token_type": self.token_type}
        body["expires_in"] = self.lifetime
        if seen.form.get("grant_type") != "client_credentials":  # RFC 6749 §4.4.3: none for a client
            body["refresh_token"] = f"refresh-{n}"
        return 200, {"Cache-Control": "no-store"}, body


def authorization_server(
    at: Peer, *, token: TokenEndpoint | None = None, issuer: str | None = None, **metadata: Any
) -> TokenEndpoint:
    """Script ``at`` as an authorization server (RFC 8414 metadata at the root, ``/token``,
    ``/authorize``, ``/register``, ``/revoke``); ``metadata`` overrides document fields."""
    endpoint = token or TokenEndpoint()
    document = {
        "issuer": issuer or at.origin,
        "authorization_endpoint": at.url("/authorize"),
        "token_endpoint": at.url("/token"),
        "registration_endpoint": at.url("/register"),
        "revocation_endpoint": at.url("/revoke"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        **metadata,
    }
    at.route("GET", "/.well-known/oauth-authorization-server", (200, {}, document))
    at.route("POST", "/token", endpoint)
    at.route("POST", "/revoke", (200, {}, {}))
    at.route(
        "POST", "/register", (201, {}, {"client_id": "registered", "token_endpoint_auth_method": "none"})
    )
    return endpoint


def protected_resource(at: Peer, path: str, resource: str, servers: list[str]) -> str:
    """Protected resource metadata (RFC 9728) at ``path`` of ``at``; returns its URL."""
    at.route("GET", path, (200, {}, {"resource": resource, "authorization_servers": servers}))
    return at.url(path)


def operation_tokens(
    server: str, mcp_url: str, settings: OAuthSettings, *, budget: float = 10
) -> OperationTokens:
    """The token side of one operation, as the client builds it, on the real clocks (the
    scripted parties are on 127.0.0.1, so private networks are allowed)."""
    deadline = OperationDeadline(budget, MonotonicClock(), server)
    return OperationTokens(
        server, mcp_url, settings, deadline, ConnectionSettings(allow_private_networks=True)
    )
