"""The handshake era (MCP 2025-03-26 .. 2025-11-25): ``initialize``, its confirmation, the
work, and a DELETE ending the session when the server issued one."""

from __future__ import annotations

import functools
import logging
from importlib import metadata
from typing import Any

from ..wire.deadline import OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.text import clean
from . import jsonrpc, resend
from .transport import Reply, Transport

logger = logging.getLogger("nr_llm.mcp")

# The newest revision this client fully supports is offered; the server may choose an
# older one we also know, and the conversation proceeds in that one.
PROTOCOL_VERSION = "2025-11-25"
KNOWN_PROTOCOL_VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26"})


@functools.cache
def client_version() -> str:
    # Cached: reading package metadata costs more than a whole local tool call's legs.
    try:
        return metadata.version("nr-llm")
    except metadata.PackageNotFoundError:
        return "0"


def client_info() -> dict[str, str]:
    return {"name": "nr-llm", "version": client_version()}


class HandshakeConversation:
    """One MCP session (or sessionless exchange) inside one operation."""

    era = "handshake"

    def __init__(self, transport: Transport, deadline: OperationDeadline) -> None:
        self.transport = transport
        self.deadline = deadline
        self.server = transport.server
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self._last_id = 0
        self._reopened = False

    def malformed(self, what: str) -> McpTransportError:
        return McpTransportError("malformed", self.server, f"MCP server {self.server!r} {what}.")

    def open(self) -> int:
        """Handshake; returns the latency of the leg that completed it (the confirmation)."""
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client_info()}
        reply = self._send(jsonrpc.request(self._next_id(), "initialize", params))
        result = jsonrpc.result_of(self._answer(reply), self.server)
        version = result.get("protocolVersion")
        if not isinstance(version, str) or version not in KNOWN_PROTOCOL_VERSIONS:
            raise self.malformed(
                f"chose protocol revision {clean(version, 40)!r}, which this client does not speak"
            )
        self.session_id = reply.session_id
        self.protocol_version = version
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        confirmed = self._send(jsonrpc.notification("notifications/initialized"))
        return confirmed.latency_ms

    def request(
        self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> tuple[dict[str, Any], int]:
        """The result of one work request and the latency of its leg (``headers`` are the
        2026 era's; this era sends none)."""
        try:
            reply = self._send(jsonrpc.request(self._next_id(), method, params))
        except McpTransportError as exc:
            if self._reopened or not resend.new_session(exc):
                raise  # among them a 404 to the resumption of an accepted request: it may have run
            # The spec: a client answered 404 for its session MUST start a new one. Once,
            # and within the same budget, so a forgetful server cannot loop us.
            self._reopened = True
            self.session_id = self.protocol_version = None
            self.open()
            reply = self._send(jsonrpc.request(self._next_id(), method, params))
        return jsonrpc.result_of(self._answer(reply), self.server), reply.latency_ms

    def end(self) -> None:
        """DELETE the session as a leg of the same budget; the answer in hand stands either way."""
        if self.session_id is None:
            return
        session_id, self.session_id = self.session_id, None
        try:
            self.transport.delete_session(self.deadline, session_id, self.protocol_version)
        except McpTransportError as exc:
            logger.info("MCP server %s: session not ended (%s)", self.server, exc.kind)

    def _send(self, message: dict[str, Any]) -> Reply:
        return self.transport.post(
            self.deadline, message, session_id=self.session_id, protocol_version=self.protocol_version
        )

    def _answer(self, reply: Reply) -> dict[str, Any]:
        if reply.answer is None:
            raise self.malformed("sent no answer")
        return reply.answer

    def _next_id(self) -> int:
        self._last_id += 1
        return self._last_id
