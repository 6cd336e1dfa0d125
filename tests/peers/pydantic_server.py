"""A Python MCP server whose tools are the twelve pydantic signatures (tests/pydantic_signatures.py).

``python -m tests.peers.pydantic_server [--fastmcp] [--network-ref]``: the official SDK's ``MCPServer`` (or
``fastmcp``'s ``FastMCP``) with each signature registered as a tool, so the input schemas are
exactly what the SDK writes (``$defs``/``$ref`` and all). A call answers with the arguments
the server validated, as JSON text; arguments it refuses make an error result. Binds 127.0.0.1
on an OS-chosen port and prints ``PORT <n>``.
"""

from __future__ import annotations

import argparse
import logging
import socket
from typing import Any

from tests.pydantic_signatures import SIGNATURES

#: A tool whose schema points at a network ``$ref`` (``--network-ref``): an import skips it.
NETWORK_REF_TOOL = "fetch_remote"


def sdk_app(network_ref: bool = False) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("pydantic signatures")
    for function in SIGNATURES:
        server.tool()(function)
    if network_ref:
        from mcp_types import ListToolsResult, PaginatedRequestParams, Tool

        schema = {"type": "object", "properties": {"doc": {"$ref": "https://schemas.invalid/doc.json"}}}

        async def list_tools(ctx: Any, params: Any) -> Any:
            extra = Tool(name=NETWORK_REF_TOOL, description="Refers elsewhere.", input_schema=schema)
            return ListToolsResult(tools=[*await server.list_tools(), extra])

        server._lowlevel_server.add_request_handler("tools/list", PaginatedRequestParams, list_tools)
    return server.streamable_http_app(stateless_http=True, json_response=True)


def fastmcp_app() -> Any:
    import fastmcp

    server = fastmcp.FastMCP("pydantic signatures (fastmcp)")
    for function in SIGNATURES:
        server.tool(function)
    return server.http_app(path="/mcp", stateless_http=True, json_response=True)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--fastmcp", action="store_true")
    parser.add_argument("--network-ref", action="store_true")
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    app = fastmcp_app() if arguments.fastmcp else sdk_app(arguments.network_ref)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
