"""fastmcp with ``fastmcp-tasks`` (the SEP-2663 tasks extension), run from a virtualenv of its own.

``fastmcp-tasks`` pins ``fastmcp-slim`` to its own release, which the project's dev virtualenv
(a newer fastmcp) cannot hold, so this peer runs as a separate process from
``tests/peers/fastmcp-tasks/.venv`` (``make peers``), as the npm peers do. It binds 127.0.0.1
on an OS-chosen port, prints ``PORT <n>`` and serves Streamable HTTP at ``/mcp``.

``crunch`` lists ``execution.taskSupport: "required"`` and takes ``seconds`` (default 5) of
wall clock; the extension's default in-memory docket runs it in this process, so a task lives
as long as the server does, whichever client polls it. With ``MCP_REQUEST_LOG`` set, the
JSON-RPC method of every POST is appended to that file, one JSON line each: the server's own
request log, which proves what it was sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from datetime import timedelta
from typing import Any

import uvicorn
from fastmcp import FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension  # type: ignore[import-not-found, unused-ignore]

Scope = dict[str, Any]
Message = dict[str, Any]


def build_server() -> FastMCP:
    server = FastMCP("fastmcp-tasks peer")
    server.add_extension(TasksExtension(url="memory://"))

    # A short poll interval: the client honours it (with its own floor), and a test should
    # see several polls within the task's few seconds.
    @server.tool(task=TaskConfig(mode="required", poll_interval=timedelta(milliseconds=500)))
    async def crunch(dataset: str, seconds: float = 5.0) -> str:
        """Crunch a dataset in the background; takes a few seconds."""
        await asyncio.sleep(seconds)
        return f"crunched {dataset} in {seconds:g} s"

    return server


def logged(app: Any, path: str) -> Any:
    """``app`` with every POST's JSON-RPC method appended to ``path`` before it is served."""

    async def wrapper(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        try:
            parsed = json.loads(body)
            lines = [{"method": m.get("method")} for m in (parsed if isinstance(parsed, list) else [parsed])]
        except ValueError:
            lines = [{"method": None, "unreadable": True}]
        with open(path, "a") as log:
            log.writelines(json.dumps(line) + "\n" for line in lines)

        async def replay() -> Message:
            # The body as read, then whatever the connection says next (a disconnect).
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return wrapper


def main() -> None:
    logging.basicConfig(level=logging.WARNING)
    app: Any = build_server().http_app(path="/mcp")
    if log := os.environ.get("MCP_REQUEST_LOG"):
        app = logged(app, log)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # Listen before announcing: early connections wait in the backlog until uvicorn serves.
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
