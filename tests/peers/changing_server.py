"""An MCP server whose tool list a test changes, and which announces each change.

``python -m tests.peers.changing_server [--modern] [--ttl-ms N] [--scope public|private]
[--listen-lifetime S]`` binds 127.0.0.1 on an OS-chosen port and prints ``PORT <n>``.

Handshake era by default (sessions; ``server/discover`` answered -32601, as a server from
before 2026 does): a ``GET /mcp`` with a session opens the session's event stream, on which
every change is announced as ``notifications/tools/list_changed``. ``--modern``: a 2026-07-28
server (no sessions); ``subscriptions/listen`` opens a stream, acknowledged first, on which
changes are announced. ``--ttl-ms`` and ``--scope`` put ``ttlMs`` and ``cacheScope`` on every
``tools/list`` answer. ``--listen-lifetime S`` ends every change stream after S seconds (a
listener that dies every second). ``--no-stream``: no change stream at all (GET answered 405,
``subscriptions/listen`` -32601), as many servers are.

Control routes (not MCP): ``POST /add/<name>`` adds a tool and announces it;
``POST /describe/<name>`` (the body is the text) changes a tool's description and announces it;
``POST /storm/<count>`` makes ``count`` changes 10 ms apart, each announced;
``POST /expire-calls/<n>`` makes the server forget its sessions when each of the next ``n``
``tools/call`` arrives (answered 404 before running it, as a restarted server does); ``GET /seen`` counts
requests by JSON-RPC method (``GET``, ``DELETE`` for those), the tools/call runs (``ran``) and
the change streams opened (``streams``).

``--dpop TOKEN``: a DPoP-protected resource (RFC 9449). Every MCP request must carry
``Authorization: DPoP TOKEN`` and a proof checked as a resource server does (signature by the
key in its header, ``htm``, ``htu``, ``ath``, a fresh ``jti``) naming the nonce this server
handed out for that HTTP method (one per method, so the GET stream is asked for its own); a
request without it is answered 401 ``use_dpop_nonce`` with the nonce. ``GET /seen`` adds
``dpop``: the nonce refusals by method and the requests refused for a bad or missing proof.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import threading
import time
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt

STATE: dict[str, Any] = {
    "tools": ["echo"],
    "sessions": set(),
    "seen": Counter(),
    "ran": 0,
    "streams": 0,
    "expire_calls": 0,
    "version": 0,
    "descriptions": {},
    "dpop": {"nonce_refusals": Counter(), "bad_proofs": 0, "jtis": set()},
}
CHANGED = threading.Condition()
ARGS = argparse.Namespace(
    modern=False, ttl_ms=None, scope=None, listen_lifetime=0.0, no_stream=False, dpop=None
)


def _tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": STATE["descriptions"].get(name, f"The {name} tool."),
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }


def _change(name: str | None = None) -> None:
    with CHANGED:
        if name is not None and name not in STATE["tools"]:
            STATE["tools"].append(name)
        STATE["version"] += 1
        CHANGED.notify_all()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dpop_refused(self) -> bool:
        """Answer 401 unless the request carries the DPoP token with a valid proof naming this
        method's nonce; True when it was refused."""
        if ARGS.dpop is None:
            return False
        dpop = STATE["dpop"]
        nonce = f"nonce-{self.command}"
        scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
        try:
            proof = self.headers["DPoP"]
            header = jwt.get_unverified_header(proof)
            assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
            key = jwt.PyJWK(header["jwk"], algorithm=header["alg"])
            claims = jwt.decode(proof, key.key, algorithms=["ES256"])
            ath = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=").decode()
            host = self.headers["Host"]
            assert scheme == "DPoP" and token == ARGS.dpop
            assert claims["htm"] == self.command and claims["htu"] == f"http://{host}/mcp"
            assert claims["ath"] == ath and claims["jti"] not in dpop["jtis"]
            dpop["jtis"].add(claims["jti"])
        except (KeyError, AssertionError, jwt.PyJWTError):
            dpop["bad_proofs"] += 1
            self._json(401, {"error": "invalid_token"}, challenge='DPoP error="invalid_token"')
            return True
        if claims.get("nonce") != nonce:
            dpop["nonce_refusals"][self.command] += 1
            self._json(401, {"error": "use_dpop_nonce"}, challenge='DPoP error="use_dpop_nonce"', nonce=nonce)
            return True
        return False

    def do_GET(self) -> None:
        if self.path == "/seen":
            dpop = {
                "nonce_refusals": dict(STATE["dpop"]["nonce_refusals"]),
                "bad_proofs": STATE["dpop"]["bad_proofs"],
            }
            seen = {
                "seen": dict(STATE["seen"]),
                "ran": STATE["ran"],
                "streams": STATE["streams"],
                "dpop": dpop,
            }
            self._json(200, seen)
            return
        if self._dpop_refused():
            return
        STATE["seen"]["GET"] += 1
        session = self.headers.get("Mcp-Session-Id")
        if ARGS.modern or ARGS.no_stream or session is None:
            self._json(405, {"error": "no GET stream"})
            return
        if session not in STATE["sessions"]:
            self._json(404, {"error": "unknown session"})
            return
        self._stream(None)

    def do_DELETE(self) -> None:
        if self._dpop_refused():
            return
        STATE["seen"]["DELETE"] += 1
        STATE["sessions"].discard(self.headers.get("Mcp-Session-Id"))
        self._json(200, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.startswith("/add/"):
            _change(self.path[len("/add/") :])
            self._json(200, {"tools": STATE["tools"]})
            return
        if self.path.startswith("/describe/"):
            STATE["descriptions"][self.path[len("/describe/") :]] = raw.decode()
            _change()
            self._json(200, {})
            return
        if self.path.startswith("/storm/"):
            count = int(self.path[len("/storm/") :])
            self._json(200, {"storm": count})

            def storm() -> None:
                for index in range(count):
                    _change(f"storm_{index:04d}")
                    time.sleep(0.01)

            threading.Thread(target=storm, daemon=True).start()
            return
        if self.path.startswith("/expire-calls/"):
            STATE["expire_calls"] = int(self.path[len("/expire-calls/") :])
            self._json(200, {})
            return
        if self._dpop_refused():
            return
        body = json.loads(raw or b"{}")
        method = body.get("method")
        STATE["seen"][method] += 1
        session = self.headers.get("Mcp-Session-Id")
        if method == "server/discover":
            if ARGS.modern:
                self._result(body, {"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "changing"}})
            else:
                self._json(
                    200, {"jsonrpc": "2.0", "id": body.get("id"), "error": {"code": -32601, "message": "no"}}
                )
            return
        if not ARGS.modern and method != "initialize" and session not in STATE["sessions"]:
            self._json(404, {"error": "unknown session"})
            return
        if method == "initialize":
            session = uuid.uuid4().hex
            STATE["sessions"].add(session)
            opened = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "changing", "version": "1"},
            }
            self._json(200, {"jsonrpc": "2.0", "id": body["id"], "result": opened}, session=session)
        elif method == "notifications/initialized":
            self._json(202, None)
        elif method == "tools/list":
            result: dict[str, Any] = {"tools": [_tool(name) for name in STATE["tools"]]}
            if ARGS.ttl_ms is not None:
                result["ttlMs"] = ARGS.ttl_ms
            if ARGS.scope is not None:
                result["cacheScope"] = ARGS.scope
            self._result(body, result)
        elif method == "tools/call":
            if STATE["expire_calls"]:
                STATE["expire_calls"] -= 1
                STATE["sessions"].clear()
                self._json(404, {"error": "unknown session"})
                return
            STATE["ran"] += 1
            text = body.get("params", {}).get("arguments", {}).get("text", "")
            self._result(body, {"content": [{"type": "text", "text": text}]})
        elif method == "subscriptions/listen" and ARGS.modern and not ARGS.no_stream:
            self._stream(body.get("id"))
        else:
            self._json(
                200, {"jsonrpc": "2.0", "id": body.get("id"), "error": {"code": -32601, "message": "no"}}
            )

    def _stream(self, listen_id: Any) -> None:
        """An event stream announcing every change from now on (acknowledged first for a
        2026 listen), until the client goes or the lifetime ends."""
        STATE["streams"] += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.close_connection = True
        meta = {"io.modelcontextprotocol/subscriptionId": listen_id}
        if listen_id is not None:
            ack = {
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": meta},
            }
            if not self._event(ack):
                return
        ends = time.monotonic() + ARGS.listen_lifetime if ARGS.listen_lifetime else None
        with CHANGED:
            seen = STATE["version"]
        while ends is None or time.monotonic() < ends:
            with CHANGED:
                CHANGED.wait(0.5)
                now = STATE["version"]
            if now != seen:
                seen = now
                params: dict[str, Any] = {"_meta": meta} if listen_id is not None else {}
                changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": params}
                if not self._event(changed):
                    return
            elif not self._write(b": keep-alive\n\n"):
                return

    def _event(self, message: dict[str, Any]) -> bool:
        return self._write(b"data: " + json.dumps(message).encode() + b"\n\n")

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            return False
        return True

    def _result(self, body: dict[str, Any], result: dict[str, Any]) -> None:
        self._json(200, {"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    def _json(
        self,
        status: int,
        payload: Any,
        *,
        session: str | None = None,
        challenge: str | None = None,
        nonce: str | None = None,
    ) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        if challenge is not None:
            self.send_header("WWW-Authenticate", challenge)
        if nonce is not None:
            self.send_header("DPoP-Nonce", nonce)
        if payload is not None:
            self.send_header("Content-Type", "application/json")
        if session is not None:
            self.send_header("Mcp-Session-Id", session)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--modern", action="store_true")
    parser.add_argument("--ttl-ms", type=int)
    parser.add_argument("--scope")
    parser.add_argument("--listen-lifetime", type=float, default=0.0)
    parser.add_argument("--no-stream", action="store_true")
    parser.add_argument("--dpop")
    parser.parse_args(namespace=ARGS)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
