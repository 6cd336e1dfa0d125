"""The official Python MCP SDK server as a test peer.

``python -m tests.peers.sdk_server [--stateless] [--extra-tools N] [--page-size P]
[--name NAME] [--server-version V] [--modern-only | --no-discover | --legacy-sse] [--gate]
[--mutable]``: the demo tools
(echo, add, slow, pixel, fail) plus N generated tools, paged by P per ``tools/list`` page when
P is given. Binds 127.0.0.1 on an OS-chosen port and prints ``PORT <n>``.

SDK 2.3 is dual-era. ``--modern-only`` serves its 2026-07-28 handler alone (a server that
never learnt ``initialize``); ``--no-discover`` answers ``server/discover`` with -32601, as a
server from before 2026 does, and serves the handshake era as usual.

Every HTTP request to ``/mcp`` is logged (method, JSON-RPC method, the ``traceparent`` in its
``params._meta``, when it arrived and was answered) and served as JSON by ``GET /requests``, so
tests count what crossed the wire and see which calls overlapped.

``--certfile F --keyfile K`` serves https with that certificate; the server names each TLS
ClientHello asked for (SNI, ``null`` for none) are served as JSON by ``GET /sni``.
``--allow-host NAME`` (repeatable) lets requests for ``NAME:<port>`` past the SDK's DNS
rebinding protection, which otherwise admits only 127.0.0.1, localhost and [::1].

``--trace-log PATH`` writes the server's own OpenTelemetry spans to PATH, one JSON line each
(name, kind, trace id, span id, parent id): a test sees whether the server joined its trace.

``--mutable`` lets a test change a tool between two imports, as a server's owner would:
``POST /tools/<name>`` with a JSON object of ``description`` and/or ``title`` replaces them, and
every later ``tools/list`` advertises the new text.

``--growable``: ``POST /grow/<name>`` adds a tool and publishes the change to every
``subscriptions/listen`` stream (the 2026-07-28 change notification).

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
import time
from typing import Any

from project.demo_mcp_server import build_server

REQUESTS: list[dict[str, Any]] = []
SNI: list[str | None] = []


def _logged(app: Any, *, refuse_discover: bool) -> Any:
    """ASGI wrapper: log each request; serve the log; optionally refuse server/discover."""
    import json

    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == "/requests":
            await _json(send, 200, REQUESTS)
            return
        if scope["path"] == "/sni":
            await _json(send, 200, SNI)
            return
        if scope["path"] != "/mcp":
            await app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            parsed = json.loads(body) if body else {}
        except ValueError:
            parsed = {}
        method = parsed.get("method") if isinstance(parsed, dict) else None
        headers = {key.decode().lower(): value.decode("latin-1") for key, value in scope["headers"]}
        params = parsed.get("params") if isinstance(parsed, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        entry: dict[str, Any] = {
            "http": scope["method"],
            "method": method,
            "protocol": headers.get("mcp-protocol-version"),
            "session": headers.get("mcp-session-id"),
            # The trace context a client put in params._meta (docs/telemetry.md).
            "traceparent": meta.get("traceparent") if isinstance(meta, dict) else None,
            # The capabilities declared: initialize's, or a 2026 request's _meta.
            "capabilities": (
                params.get("capabilities")
                if method == "initialize" and isinstance(params, dict)
                else meta.get("io.modelcontextprotocol/clientCapabilities")
                if isinstance(meta, dict)
                else None
            ),
            # What a tools/call asked for: a test counts the sends of one call.
            "arguments": params.get("arguments") if isinstance(params, dict) else None,
            "name": params.get("name") if isinstance(params, dict) else None,
            # When it arrived and was answered (this server's clock): which calls overlapped.
            "started": time.time(),
            "ended": None,
        }
        REQUESTS.append(entry)
        if refuse_discover and method == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            await _json(send, 200, {"jsonrpc": "2.0", "id": parsed.get("id"), "error": error})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        try:
            await app(scope, replay, send)
        finally:
            entry["ended"] = time.time()

    return wrapper


async def _json(send: Any, status: int, payload: Any) -> None:
    import json

    data = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _security(names: list[str], *, https: bool) -> Any:
    """The SDK's DNS rebinding protection as it sets it up for 127.0.0.1, plus ``names``."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1", "localhost", "[::1]", *names]
    scheme = "https" if https else "http"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:*" for host in hosts],
        allowed_origins=[f"{scheme}://{host}:*" for host in hosts],
    )


def _modern_only(lowlevel: Any) -> Any:
    """An ASGI app that serves only the SDK's 2026-07-28 handler, with the server's lifespan."""
    import contextlib

    from mcp.server._streamable_http_modern import handle_modern_request
    from starlette.applications import Starlette
    from starlette.routing import Route

    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> Any:
        async with lowlevel.lifespan(lowlevel) as lifespan_state:
            state["value"] = lifespan_state
            yield

    class Modern:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await handle_modern_request(lowlevel, None, True, state.get("value"), scope, receive, send)

    return Starlette(
        routes=[Route("/mcp", endpoint=Modern(), methods=["GET", "POST", "DELETE"])], lifespan=lifespan
    )


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


def _mutable(server: Any, app: Any) -> Any:
    """``app`` plus ``POST /tools/<name>``, which rewrites that tool's description or title."""

    async def control(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/tools/") and scope["method"] == "POST":
            tool = server._tool_manager.get_tool(scope["path"][len("/tools/") :])
            body = b""
            more = True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            if tool is None:
                await _json(send, 404, {"error": "no such tool"})
                return
            for key, value in json.loads(body).items():
                if key in ("description", "title"):
                    setattr(tool, key, value)
            await _json(send, 200, {"description": tool.description, "title": tool.title})
            return
        await app(scope, receive, send)

    return control


def _growable(server: Any, app: Any) -> Any:
    """``app`` plus ``POST /grow/<name>``: adds a tool and announces the change to every
    ``subscriptions/listen`` stream, as a server whose owner deploys a new tool does."""
    from mcp.shared.subscriptions import ToolsListChanged

    async def control(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/grow/") and scope["method"] == "POST":
            name = scope["path"][len("/grow/") :]
            server.add_tool(lambda text="": text, name=name, description=f"Grown tool {name}.")
            await server._subscriptions.publish(ToolsListChanged())
            await _json(send, 200, {"added": name})
            return
        await app(scope, receive, send)

    return control


def _trace_to(path: str) -> None:
    """The SDK server's own OpenTelemetry spans (it makes one per message, its parent read from
    ``params._meta``), one JSON line each: name, trace, span and parent ids."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    def line(span: Any) -> str:
        context, parent = span.get_span_context(), span.parent
        return (
            json.dumps(
                {
                    "name": span.name,
                    "kind": span.kind.name,
                    "trace_id": f"{context.trace_id:032x}",
                    "span_id": f"{context.span_id:016x}",
                    "parent_id": f"{parent.span_id:016x}" if parent is not None else None,
                }
            )
            + "\n"
        )

    provider = TracerProvider()
    log = open(path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=log, formatter=line)))
    trace.set_tracer_provider(provider)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--extra-tools", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--name", default="nr-llm test peer")
    parser.add_argument("--server-version", default="1.2.3")
    era = parser.add_mutually_exclusive_group()
    era.add_argument("--modern-only", action="store_true")
    era.add_argument("--no-discover", action="store_true")
    era.add_argument("--legacy-sse", action="store_true")
    parser.add_argument("--gate", action="store_true")
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("--allow-host", action="append", default=[])
    parser.add_argument("--mutable", action="store_true")
    parser.add_argument("--growable", action="store_true")
    parser.add_argument("--trace-log")
    args = parser.parse_args()
    if args.trace_log:
        _trace_to(args.trace_log)

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

    if args.modern_only:
        app = _modern_only(server._lowlevel_server)
    elif args.legacy_sse:
        app = server.sse_app()  # the 2024-11-05 HTTP+SSE transport: GET /sse, POST /messages/
    else:
        app = server.streamable_http_app(
            stateless_http=args.stateless,
            json_response=args.stateless,
            transport_security=_security(args.allow_host, https=bool(args.certfile)),
        )
    if args.gate:
        app = _gated(server, app)
    if args.mutable:
        app = _mutable(server, app)
    if args.growable:
        app = _growable(server, app)
    app = _logged(app, refuse_discover=args.no_discover)
    sock = socket.socket()
    # As uvicorn's own listener (asyncio sets it on TCP sockets) and gunicorn's have it: without
    # it, Nagle holds the body uvicorn writes after the headers until the client's delayed ACK
    # (40 ms) on every kept-alive connection. Accepted connections inherit it (Linux).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    # Listen before announcing: early connections wait in the backlog until uvicorn serves.
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ssl_certfile=args.certfile, ssl_keyfile=args.keyfile
    )
    if args.certfile:
        config.load()  # builds the SSLContext now, so that it can note each ClientHello's name
        assert config.ssl is not None
        config.ssl.sni_callback = lambda _sock, name, _context: SNI.append(name)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
