"""A demo MCP server on the official Python SDK, for `make demo` and the tests.

Run: ``python -m project.demo_mcp_server --port 8765 [--stateless] [--graceful-timeout S]``. It binds to
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import base64
import logging
import time
from typing import Any

# A 1x1 transparent PNG: enough for a client to see an image block.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def build_server(name: str = "nr-llm demo", version: str = "1.0.0") -> Any:
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, version=version)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool()
    def slow(seconds: float = 2.0) -> str:
        """Sleep for the given number of seconds, then answer (watch the budget at work)."""
        time.sleep(max(0.0, min(seconds, 120.0)))
        return f"slept {seconds:g} s"

    @server.tool(structured_output=False)
    def pixel() -> list[Any]:
        """Answer with a caption and a 1x1 PNG image block."""
        return ["a single pixel", Image(data=PIXEL_PNG, format="png")]

    @server.tool()
    def fail(reason: str = "this tool always fails") -> str:
        """Always fail: the answer carries isError, it is not a transport failure."""
        raise ToolError(reason)

    return server


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--stateless", action="store_true", help="stateless JSON answers (no session)")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        default=None,
        help="seconds to wait for open connections (event streams) when stopping",
    )
    args = parser.parse_args()
    # The SDK's start and stop notes would sit among the demo's banner and its "stopped" line.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    app = build_server().streamable_http_app(stateless_http=args.stateless, json_response=args.stateless)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=args.graceful_timeout,
    )


if __name__ == "__main__":
    main()
