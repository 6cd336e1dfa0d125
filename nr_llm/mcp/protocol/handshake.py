"""The handshake era (MCP 2025-03-26 .. 2025-11-25): ``initialize``, its confirmation, the
work, and a DELETE ending the session when the server issued one."""

from __future__ import annotations

import functools
import logging
import threading
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ..wire.deadline import OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.text import clean
from . import elicitation, jsonrpc, resend
from .transport import Reply, Transport

if TYPE_CHECKING:
    from .modern_conversation import InputResponder

logger = logging.getLogger("nr_llm.mcp")

# The newest revision this client fully supports is offered; the server may choose an
# older one we also know, and the conversation proceeds in that one.
PROTOCOL_VERSION = "2025-11-25"
KNOWN_PROTOCOL_VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26"})
# How long the work waits for the session's GET stream to open (and the stream's thread for
# the session's end): a server that never opens it costs at most this, within the budget.
LISTEN_WAIT_SECONDS = 2.0


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

    def __init__(
        self, transport: Transport, deadline: OperationDeadline, responder: InputResponder | None = None
    ) -> None:
        self.transport = transport
        # Answers the server's elicitation requests; its capabilities are the ones declared.
        self.responder = responder
        self._listener: threading.Thread | None = None
        self.deadline = deadline
        self.server = transport.server
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.server_capabilities: dict[str, Any] = {}
        # Set while a task of this session has not ended (tasks.py): the session is its home,
        # so ending it would end the task with it.
        self.keep_session = False
        self._last_id = 0
        self._reopened = False

    def malformed(self, what: str) -> McpTransportError:
        return McpTransportError("malformed", self.server, f"MCP server {self.server!r} {what}.")

    def open(self) -> int:
        """Handshake; returns the latency of the leg that completed it (the confirmation)."""
        # No capability is declared unless a responder is given (then only its own).
        capabilities = dict(self.responder.capabilities) if self.responder is not None else {}
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": capabilities,
            "clientInfo": client_info(),
        }
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
        offered = result.get("capabilities")
        self.server_capabilities = offered if isinstance(offered, dict) else {}
        confirmed = self._send(jsonrpc.notification("notifications/initialized"))
        self.transport.on_server_request = self._answer_server_request
        if self.responder is not None and self.session_id is not None:
            self._listen()
        return confirmed.latency_ms

    def adopt(self, session_id: str, protocol_version: str) -> None:
        """Go on in a session an earlier operation opened (the home of a task, tasks.py): no
        handshake; a server that forgot it answers 404, and the task is lost with it."""
        self.session_id = session_id
        self.protocol_version = protocol_version or PROTOCOL_VERSION
        # A forgotten session is not replaced by a new one: the task would not be in it.
        self._reopened = True
        self.transport.on_server_request = self._answer_server_request

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        """Answer a server's request (an elicitation) with a POST of our response, a leg of the
        same budget; the call it belongs to goes on reading its own stream."""
        response = elicitation.response_to(message, self.responder)
        try:
            self.transport.post(
                self.deadline, response, session_id=self.session_id, protocol_version=self.protocol_version
            )
        except McpTransportError as exc:
            logger.info(
                "MCP server %s: the answer to its request was not delivered (%s)", self.server, exc.kind
            )

    def _listen(self) -> None:
        """Open the session's GET stream on a thread of its own, and wait (briefly, within the
        budget) until it is open, so a server that asks there during the call can be heard."""
        opened = threading.Event()
        session_id, version = self.session_id, self.protocol_version
        assert session_id is not None

        def run() -> None:
            try:
                self.transport.listen(
                    self.deadline,
                    "GET",
                    None,
                    self.transport._dispatch,
                    session_id=session_id,
                    protocol_version=version,
                    opened=opened.set,
                )
            except McpTransportError as exc:
                logger.info("MCP server %s: no GET stream (%s)", self.server, exc.kind)
            except Exception:
                # A reporting boundary on a thread of our own: the call goes on without the stream.
                logger.info("MCP server %s: the GET stream failed", self.server, exc_info=True)
            finally:
                opened.set()

        self._listener = threading.Thread(target=run, name="nr-llm-mcp-session-stream", daemon=True)
        self._listener.start()
        opened.wait(min(LISTEN_WAIT_SECONDS, max(self.deadline.remaining_ns() / 1e9, 0.0)))

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
        """DELETE the session as a leg of the same budget; the answer in hand stands either way.
        A GET stream the session had ends with it (the server closes it)."""
        if self.session_id is None or self.keep_session:
            return
        session_id, self.session_id = self.session_id, None
        try:
            self.transport.delete_session(self.deadline, session_id, self.protocol_version)
        except McpTransportError as exc:
            logger.info("MCP server %s: session not ended (%s)", self.server, exc.kind)
        if self._listener is not None:
            self._listener.join(LISTEN_WAIT_SECONDS)

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
