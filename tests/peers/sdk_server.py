"""The official Python MCP SDK server as a test peer.

``python -m tests.peers.sdk_server [--stateless] [--extra-tools N] [--page-size P]
[--name NAME] [--server-version V] [--gate]``: the demo tools (echo, add, slow, pixel, fail)
plus N generated tools, paged by P per ``tools/list`` page when P is given. Binds 127.0.0.1
on an OS-chosen port and prints ``PORT <n>``.

``--gate`` holds every ``tools/list`` answer until the test lets one through, so a test can
see an import while it runs: ``GET /gate`` answers ``{"requests": MCP requests received,
"waiting": lists held, "served": lists answered}``; ``POST /gate/release`` lets the oldest
held list (or the next to arrive) through. A held list gives up waiting after
``GATE_LIMIT_SECONDS`` and answers anyway, so nothing outlives its test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from typing import Any

from project.demo_mcp_server import build_server


def _paged(server: Any, page_size: int) -> None:
    # MCPServer answers tools/list in one page; replace that handler with one that cuts
    # pages with an opaque cursor, as a large real server would.
    from mcp_types import ListToolsResult, PaginatedRequestParams

    async def handle_list_tools(ctx: Any, params: Any) -> Any:
        tools = await server.list_tools()
        cursor = getattr(params, "cursor", None)
        start = int(cursor[len("page-") :]) if cursor else 0
        page = tools[start : start + page_size]
        more = start + page_size < len(tools)
        return ListToolsResult(tools=page, next_cursor=f"page-{start + page_size}" if more else None)

    server._lowlevel_server.add_request_handler("tools/list", PaginatedRequestParams, handle_list_tools)


GATE_LIMIT_SECONDS = 60.0


class _Gate:
    """Counts and holds ``tools/list`` requests; runs on the server's one event loop."""

    def __init__(self) -> None:
        self.requests = 0
        self.waiting = 0
        self.served = 0
        self._permits = asyncio.Semaphore(0)

    async def hold(self) -> None:
        self.waiting += 1
        try:
            await asyncio.wait_for(self._permits.acquire(), GATE_LIMIT_SECONDS)
        except TimeoutError:
            pass
        finally:
            self.waiting -= 1
        self.served += 1

    def release(self) -> None:
        self._permits.release()


def _gated(server: Any, app: Any) -> Any:
    """``app`` with its ``tools/list`` held at a gate, and the gate's two control routes."""
    from mcp_types import ListToolsResult, PaginatedRequestParams

    gate = _Gate()

    async def handle_list_tools(ctx: Any, params: Any) -> Any:
        await gate.hold()
        return ListToolsResult(tools=await server.list_tools())

    server._lowlevel_server.add_request_handler("tools/list", PaginatedRequestParams, handle_list_tools)

    async def control(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in ("/gate", "/gate/release"):
            if scope["path"] == "/gate/release" and scope["method"] == "POST":
                gate.release()
            body = json.dumps({"requests": gate.requests, "waiting": gate.waiting, "served": gate.served})
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        if scope["type"] == "http":
            gate.requests += 1
        await app(scope, receive, send)

    return control


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--name", default="nr-llm test peer")
    parser.add_argument("--server-version", default="1.2.3")
    parser.add_argument("--gate", action="store_true")
    args = parser.parse_args()

    import logging

    import uvicorn

    # The SDK logs every session at INFO; a test peer should be quiet unless it fails.
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.WARNING)

    server = build_server(name=args.name, version=args.server_version)
    for index in range(args.extra_tools):
        server.add_tool(
            lambda text="": text, name=f"generated_{index:03d}", description=f"Generated tool {index}."
        )
    if args.page_size:
        _paged(server, args.page_size)

    app = server.streamable_http_app(stateless_http=args.stateless, json_response=args.stateless)
    if args.gate:
        app = _gated(server, app)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listen before announcing: early connections wait in the backlog until uvicorn serves.
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
