"""The official Python SDK server advertising the schema corpus (tests/schema_corpus.py) as sent.

``python -m tests.peers.schema_server``: every corpus tool with its input schema exactly as
written (the SDK would otherwise derive schemas from Python signatures), plus the SDK demo
tools. A corpus tool answers with the arguments it received, as JSON. Requests to ``/mcp`` are
logged and served by ``GET /requests`` (tests/peers/sdk_server.py), so a test counts what
reached the server. Binds 127.0.0.1 on an OS-chosen port and prints ``PORT <n>``.
"""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

from project.demo_mcp_server import build_server
from tests.peers.sdk_server import _logged
from tests.schema_corpus import CORPUS


def main() -> None:
    import uvicorn
    from mcp_types import (
        CallToolRequestParams,
        CallToolResult,
        ListToolsResult,
        PaginatedRequestParams,
        TextContent,
        Tool,
    )

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = build_server(name="schema corpus")
    demo_call = server._lowlevel_server._request_handlers["tools/call"].handler

    async def list_tools(ctx: Any, params: Any) -> Any:
        corpus = [
            Tool(name=name, description=f"Corpus tool {name}.", input_schema=schema)
            for name, schema in CORPUS.items()
        ]
        return ListToolsResult(tools=[*await server.list_tools(), *corpus])

    async def call_tool(ctx: Any, params: Any) -> Any:
        if params.name in CORPUS:
            text = json.dumps(params.arguments or {}, sort_keys=True)
            return CallToolResult(content=[TextContent(type="text", text=text)])
        return await demo_call(ctx, params)

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    lowlevel.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    app = _logged(server.streamable_http_app(stateless_http=True, json_response=True), refuse_discover=False)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
