"""An MCP server whose tools answer with crafted results, good and hostile, for the result tests.

``python -m tests.peers.result_server`` binds 127.0.0.1 on an OS-chosen port and prints
``PORT <n>``. It speaks the handshake era without sessions (``server/discover`` is refused as
by a server from before 2026), answers ``POST /mcp`` as JSON, and lists the tools of ``TOOLS``;
each ``tools/call`` is answered with that tool's result, whatever the arguments. ``tattle`` quotes
the Authorization header it was sent in its text, an embedded resource and its structured content,
as a careless server does.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"}},
    "required": ["temperature", "conditions"],
}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(data: str, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime}


def _nested(depth: int) -> str:
    """Structured content ``depth`` objects deep, written as text (json.dumps would recurse)."""
    return '{"a":' * depth + "1" + "}" * depth


# name -> (outputSchema or None, the result as JSON text: big and deep ones are built as text)
TOOLS: dict[str, tuple[dict[str, Any] | None, Callable[[], str]]] = {
    "weather": (
        WEATHER_SCHEMA,
        lambda: json.dumps(
            {
                "content": [_text('{"temperature": 33, "conditions": "Cloudy"}')],
                "structuredContent": {"temperature": 33, "conditions": "Cloudy"},
            }
        ),
    ),
    "weather-wrong": (
        WEATHER_SCHEMA,
        lambda: json.dumps(
            {"content": [_text("hot")], "structuredContent": {"temperature": "hot", "conditions": "Sunny"}}
        ),
    ),
    "weather-failed": (
        WEATHER_SCHEMA,
        lambda: json.dumps({"content": [_text("no station in Atlantis")], "isError": True}),
    ),
    "pictures": (
        None,
        lambda: json.dumps(
            {
                "content": [
                    _text("two pictures"),
                    _image(PNG),
                    _image("%%% not base64 %%%"),
                    _image(PNG, "image/svg+xml"),
                    _image(PNG, "image/png;base64,AAAA"),
                    _image(PNG, 'image/png" onerror="alert(1)'),
                    {
                        "type": "audio",
                        "data": base64.b64encode(b"RIFF....WAVE").decode(),
                        "mimeType": "audio/wav",
                    },
                    {"type": "hologram", "text": "3-D"},
                    {"type": "resource_link", "uri": "javascript:alert(1)", "name": "click"},
                    {"type": "resource_link", "uri": "https://example.org/r", "name": "report"},
                    {
                        "type": "resource",
                        "resource": {"uri": "demo://note", "mimeType": "text/plain", "text": "a note"},
                    },
                ]
            }
        ),
    ),
    # About 1.4 MB of base64 (a 1.05 MB image): over the 1 MiB block cap, under the 2 MiB body cap.
    "huge-image": (None, lambda: json.dumps({"content": [_image("A" * 1_400_000)]})),
    # 50 MB of base64: the client stops reading at its body cap.
    "flood": (None, lambda: json.dumps({"content": [_image("A" * 50_000_000)]})),
    "deep-500": ({"type": "object"}, lambda: '{"content": [], "structuredContent": ' + _nested(500) + "}"),
    "deep-10000": (
        {"type": "object"},
        lambda: '{"content": [], "structuredContent": ' + _nested(10_000) + "}",
    ),
    "tattle": ({"type": "object"}, lambda: ""),  # answered from the request's headers (Handler)
}


def _tattle(sent: str) -> str:
    return json.dumps(
        {
            "content": [
                _text(f"you sent {sent}"),
                {"type": "resource", "resource": {"uri": "demo://sent", "text": sent}},
            ],
            "structuredContent": {"sent": sent},
        }
    )


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: a test peer speaks only when it fails

    def do_DELETE(self) -> None:
        self._send(405, b"")

    def do_GET(self) -> None:
        self._send(405, b"")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        method = body.get("method")
        if "id" not in body:
            self._send(202, b"")
            return
        if method == "initialize":
            result = json.dumps(
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "results", "version": "1"},
                }
            )
        elif method == "tools/list":
            listed = [
                {"name": name, "inputSchema": {"type": "object"}}
                | ({"outputSchema": schema} if schema else {})
                for name, (schema, _) in TOOLS.items()
            ]
            result = json.dumps({"tools": listed})
        elif method == "tools/call" and body["params"]["name"] == "tattle":
            result = _tattle(self.headers.get("Authorization", ""))
        elif method == "tools/call" and body["params"]["name"] in TOOLS:
            result = TOOLS[body["params"]["name"]][1]()
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            self._send(200, json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error}).encode())
            return
        self._send(
            200,
            ('{"jsonrpc": "2.0", "id": ' + json.dumps(body["id"]) + ', "result": ' + result + "}").encode(),
        )

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        # The client stops reading at its cap, as it should.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(payload)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
