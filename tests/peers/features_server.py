"""The official Python SDK server (MCPServer, 2.3) offering more than tools: resources, a
resource template, prompts, completion, a tool that returns resource links and a ``file://``
embedded resource, and tools that ask for input (elicitation: a form, a URL).

Run: ``python -m tests.peers.features_server [--modern-only | --no-discover] [--certfile F --keyfile K
--allow-host H]``; it prints ``PORT <n>`` once it listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import base64
import socket
from typing import Annotated, Any

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, Resolve
from pydantic import BaseModel, Field

from tests.peers import VERIFY_URL
from tests.peers.sdk_server import _logged, _modern_only, _security

PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def build_server() -> Any:
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
    from mcp.types import (
        Completion,
        EmbeddedResource,
        PromptReference,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    server = MCPServer("nr-llm features peer", version="2.0.0")

    @server.resource("docs://readme", name="readme", mime_type="text/markdown", description="The readme")
    def readme() -> str:
        return "# Hello\nThe readme."

    @server.resource("docs://logo", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return PIXEL

    @server.resource("docs://big", name="big", mime_type="text/plain")
    def big() -> str:
        return "x" * 3_000_000

    @server.resource("notes://{topic}/page", name="note", mime_type="text/plain")
    def note(topic: str) -> str:
        return f"note about {topic}"

    @server.prompt(name="greet", description="Greet someone")
    def greet(name: str, style: str = "plain") -> list[Any]:
        return [
            UserMessage(f"Say hello to {name} in a {style} way."),
            AssistantMessage("Understood."),
        ]

    @server.prompt(name="look")
    def look() -> list[Any]:
        return [
            UserMessage(content=Image(data=PIXEL, format="png").to_image_content()),
            UserMessage(
                content=EmbeddedResource(
                    type="resource",
                    resource=TextResourceContents(
                        uri="file:///srv/notes/a.txt", mime_type="text/plain", text="a note"
                    ),
                )
            ),
        ]

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> Any:
        if isinstance(ref, PromptReference) and argument.name == "style":
            return Completion(values=[v for v in ("plain", "pirate", "poem") if v.startswith(argument.value)])
        if argument.name == "topic":
            return Completion(values=[v for v in ("rust", "ruby", "python") if v.startswith(argument.value)])
        return None

    @server.tool(structured_output=False)
    def linked() -> list[Any]:
        """Answer with a link to the readme and a file:// embedded resource."""
        return [
            TextContent(type="text", text="see the readme"),
            ResourceLink(type="resource_link", uri="docs://readme", name="readme"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="file:///srv/notes/a.txt", mime_type="text/plain", text="a note"
                ),
            ),
        ]

    @server.tool()
    async def book(ctx: Context) -> str:
        """Ask the user for a booking's details (elicitation)."""
        answer = await ctx.elicit("When would you like to come?", Booking)
        if answer.action == "accept":
            return f"booked {answer.data.date} for {answer.data.guests} (confirm={answer.data.confirm})"
        return f"not booked: {answer.action}"

    @server.tool()
    async def verify(ctx: Context) -> str:
        """Send the user to a URL (URL-mode elicitation); a hostile scheme, which no client opens."""
        answer = await ctx.elicit_url("Verify your account there.", VERIFY_URL, "verify-1")
        return f"verify: {answer.action}"

    @server.tool()
    async def reserve(booking: Annotated[ElicitationResult[Booking], Resolve(ask_booking)]) -> str:
        """The same question through the SDK's resolver: a mid-call request in the handshake
        era, an input_required result (multi round-trip) in the 2026-07-28 era."""
        if booking.action == "accept":
            return f"reserved {booking.data.date} for {booking.data.guests} (confirm={booking.data.confirm})"
        return f"not reserved: {booking.action}"

    return server


class Booking(BaseModel):
    date: str = Field(description="Which day")
    guests: int = Field(default=2, description="How many")
    confirm: bool = Field(default=True)


def ask_booking() -> Elicit[Booking]:
    return Elicit("When would you like to come?", Booking)


def main() -> None:
    parser = argparse.ArgumentParser()
    era = parser.add_mutually_exclusive_group()
    era.add_argument("--modern-only", action="store_true")
    era.add_argument("--no-discover", action="store_true", help="refuse server/discover: handshake era only")
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("--allow-host", action="append", default=[])
    args = parser.parse_args()

    import logging

    import uvicorn

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.WARNING)
    server = build_server()
    if args.modern_only:
        app = _modern_only(server._lowlevel_server)
    else:
        app = server.streamable_http_app(
            transport_security=_security(args.allow_host, https=bool(args.certfile))
        )
    app = _logged(app, refuse_discover=args.no_discover)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        app, log_level="warning", lifespan="on", ssl_certfile=args.certfile, ssl_keyfile=args.keyfile
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
