"""McpClient: ping(), list_tools(), call_tool(), each one operation under one deadline.

An operation is one conversation with one server: ``initialize``, the
``notifications/initialized`` confirmation, the work, and a DELETE ending the session
when the server issued one. Every leg spends the same ``OperationDeadline``. A fresh
``requests`` session per operation keeps one server's session id and connection away
from every other server. No other traffic is sent: no GET stream, no hidden ``tools/list``.

The client takes no cancellation token and has no abort method (seed 000, "What this
does not do"): the budget decides what the next leg gets and whether it is sent at all.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any, Protocol

from . import jsonrpc
from .content import outcome_of
from .deadline import Clock, MonotonicClock, OperationDeadline
from .endpoint import Endpoint
from .errors import McpTransportError
from .hostgate import refuse_private, resolve
from .results import CallOutcome, ConnectionReport
from .text import NAME_LIMIT, clean
from .transport import Reply, SessionFactory, Transport, auth_headers, default_session

logger = logging.getLogger("nr_llm.mcp")

# The newest revision this client fully supports is offered; the server may choose an
# older one we also know, and the conversation proceeds in that one.
PROTOCOL_VERSION = "2025-11-25"
KNOWN_PROTOCOL_VERSIONS = frozenset({"2025-11-25", "2025-06-18", "2025-03-26"})
MAX_PAGES = 50


@functools.cache
def _client_version() -> str:
    # Cached: reading package metadata costs more than a whole local tool call's legs.
    try:
        return metadata.version("nr-llm")
    except metadata.PackageNotFoundError:
        return "0"


class InputResponder(Protocol):
    """Answers the input requests of a 2026-07-28 ``input_required`` result."""

    capabilities: dict[str, Any]

    def answer(self, input_requests: dict[str, Any]) -> dict[str, Any]: ...


class HealthSink(Protocol):
    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None: ...


class McpClient:
    def __init__(
        self,
        *,
        allow_private_networks: bool = False,
        clock: Clock | None = None,
        health: HealthSink | None = None,
        session_factory: SessionFactory | None = None,
    ) -> None:
        self.allow_private_networks = allow_private_networks
        self.clock: Clock = clock or MonotonicClock()
        self.health = health
        self.session_factory: SessionFactory = session_factory or default_session

    def ping(self, endpoint: Endpoint) -> ConnectionReport:
        """The handshake only; a transport failure is a report with ``reachable=False``."""
        try:
            with self._conversation(endpoint) as conversation:
                latency_ms = conversation.open()
        except McpTransportError as exc:
            return ConnectionReport(reachable=False, error=str(exc))
        self._record(endpoint, latency_ms)
        return ConnectionReport(
            reachable=True,
            latency_ms=latency_ms,
            protocol_version=conversation.protocol_version or "",
            server_name=clean(conversation.server_info.get("name", ""), NAME_LIMIT),
            server_version=clean(conversation.server_info.get("version", ""), NAME_LIMIT),
        )

    def list_tools(
        self, endpoint: Endpoint, on_page: Callable[[int, int], None] | None = None
    ) -> list[dict[str, Any]]:
        """Every advertised tool object, all pages, under one budget.

        ``on_page(pages, tools)`` hears after each page how far the walk is. It is progress
        only: whatever it raises is logged and the walk goes on, so it can never serve as
        the cancellation seam this client deliberately lacks (seed 000).
        """
        tools: list[dict[str, Any]] = []
        seen: set[str] = set()
        cursor: str | None = None
        with self._conversation(endpoint) as conversation:
            conversation.open()
            for pages in range(1, MAX_PAGES + 1):
                result, latency_ms = conversation.request(
                    "tools/list", {} if cursor is None else {"cursor": cursor}
                )
                page = result.get("tools")
                if not isinstance(page, list):
                    raise conversation.malformed("sent a tools/list page without a tools list")
                tools.extend(tool for tool in page if isinstance(tool, dict))
                if on_page is not None:
                    _report_progress(on_page, pages, len(tools))
                cursor = result.get("nextCursor")
                if cursor is None:
                    break
                if not isinstance(cursor, str):
                    raise conversation.malformed("sent a nextCursor that is not a string")
                if cursor in seen:
                    raise conversation.malformed("repeated a page cursor; the catalogue would never end")
                seen.add(cursor)
            else:
                raise conversation.malformed(f"advertises more than {MAX_PAGES} pages of tools")
        self._record(endpoint, latency_ms)
        return tools

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
        responder: InputResponder | None = None,
    ) -> CallOutcome:
        """Call one tool; ``isError`` is a failed outcome, a broken conversation an exception.

        ``input_schema`` is the tool's listed schema (its ``x-mcp-header`` properties become
        ``Mcp-Param-*`` headers in the 2026-07-28 era); ``responder`` answers a 2026 server's
        input requests. Neither changes the handshake era's request.
        """
        with self._conversation(endpoint) as conversation:
            conversation.open()
            result, latency_ms = conversation.request(
                "tools/call", {"name": name, "arguments": arguments or {}}
            )
            outcome = outcome_of(result, endpoint.identifier)
        self._record(endpoint, latency_ms)
        return outcome

    @contextlib.contextmanager
    def _conversation(self, endpoint: Endpoint) -> Iterator[_Conversation]:
        deadline = OperationDeadline(endpoint.budget_seconds, self.clock, endpoint.identifier)
        # Both refusals come before any session exists: nothing is sent, nothing attached.
        credential_headers = auth_headers(endpoint)
        # The lookup spends the operation's budget like a leg does.
        addresses = resolve(endpoint.url, endpoint.identifier, deadline.grant())
        if not self.allow_private_networks:
            refuse_private(addresses, endpoint.identifier)
        session = self.session_factory()
        try:
            transport = Transport(
                endpoint,
                session,
                self.clock,
                auth_headers=credential_headers,
                allow_private_networks=self.allow_private_networks,
                addresses=addresses,
            )
            conversation = _Conversation(transport, deadline)
            try:
                yield conversation
            finally:
                conversation.end()
        finally:
            session.close()

    def _record(self, endpoint: Endpoint, latency_ms: int) -> None:
        if self.health is None:
            return
        try:
            self.health.record_contact(endpoint, latency_ms)
        except Exception:
            # A reporting boundary: the operation has its answer; bookkeeping must not undo it.
            logger.warning("could not record contact with MCP server %s", endpoint.identifier, exc_info=True)


class _Conversation:
    """One MCP session (or sessionless exchange) inside one operation."""

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
        params = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "nr-llm", "version": _client_version()},
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
        confirmed = self._send(jsonrpc.notification("notifications/initialized"))
        return confirmed.latency_ms

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The result of one work request and the latency of its leg."""
        try:
            reply = self._send(jsonrpc.request(self._next_id(), method, params))
        except McpTransportError as exc:
            if exc.kind != "session_expired" or self._reopened:
                raise
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


def _report_progress(on_page: Callable[[int, int], None], pages: int, tools: int) -> None:
    try:
        on_page(pages, tools)
    except Exception:
        # A reporting boundary: a broken progress display must neither fail nor stop the walk.
        logger.warning("MCP progress callback failed", exc_info=True)
