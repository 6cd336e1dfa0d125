"""The 2026-07-28 era: one self-describing POST per request, no session, nothing to end."""

from __future__ import annotations

from typing import Any, Protocol

from ..wire.deadline import OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.text import clean
from . import jsonrpc, modern, tasks
from .handshake import client_info
from .transport import Transport

# Rounds of input a server may ask for in one call before the client gives up on it.
MAX_INPUT_ROUNDS = 8


class InputResponder(Protocol):
    """Answers the input requests of an ``input_required`` result (multi round-trip
    requests). ``capabilities`` is declared in every request's ``_meta`` when one is given."""

    capabilities: dict[str, Any]

    def answer(self, input_requests: dict[str, Any]) -> dict[str, Any]: ...


class ModernConversation:
    era = "modern"

    def __init__(
        self,
        transport: Transport,
        deadline: OperationDeadline,
        version: str,
        responder: InputResponder | None = None,
    ) -> None:
        self.transport = transport
        self.deadline = deadline
        self.server = transport.server
        self.protocol_version = version
        self.responder = responder
        self.server_info: dict[str, Any] = {}
        # The discover result and its leg's latency, when this operation probed.
        self.discovered: tuple[dict[str, Any], int] | None = None
        self._last_id = 0

    def malformed(self, what: str) -> McpTransportError:
        return McpTransportError("malformed", self.server, f"MCP server {self.server!r} {what}.")

    def open(self) -> int:
        return 0  # nothing to open: every request stands alone

    def end(self) -> None:
        return None  # no session to end

    def discover(self) -> tuple[dict[str, Any], int]:
        result, latency_ms = self._send("server/discover", {}, None)
        self.server_info = modern.server_info(result)
        self.discovered = (result, latency_ms)
        return result, latency_ms

    def request(
        self,
        method: str,
        params: dict[str, Any],
        headers: dict[str, str] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], int]:
        """The complete result of ``method``; input the server asks for goes to the responder
        and the request is repeated (a new id, the server's ``requestState`` echoed as is).

        ``capabilities`` replaces the request's declared ones (the tasks extension, tasks.py);
        with the extension declared, a ``tools/call`` may be answered with a task
        (``resultType: "task"``), returned as it came; any other request so answered is malformed.
        """
        retry = dict(params)
        declared_tasks = capabilities is not None and tasks.EXTENSION in (
            capabilities.get("extensions") or {}
        )
        for _round in range(MAX_INPUT_ROUNDS):
            result, latency_ms = self._send(method, retry, headers, capabilities)
            kind = result.get("resultType", "complete")
            if kind == "complete":
                return result, latency_ms
            if kind == "task" and declared_tasks and method == "tools/call":
                return result, latency_ms
            if kind != "input_required":
                raise self.malformed(f"answered with resultType {clean(kind, 40)!r}, unknown to this client")
            asked = result.get("inputRequests")
            asked = asked if isinstance(asked, dict) else {}
            if self.responder is None:
                wanted = sorted({str(r.get("method")) for r in asked.values() if isinstance(r, dict)})
                raise McpTransportError(
                    "input_required",
                    self.server,
                    f"MCP server {self.server!r} needs input to finish {method} "
                    f"({clean(', '.join(wanted) or 'unspecified', 120)}); this client declares no "
                    "capability to provide it.",
                )
            retry = {
                key: value for key, value in params.items() if key not in ("inputResponses", "requestState")
            }
            retry["inputResponses"] = self.responder.answer(asked)
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
        raise self.malformed(f"asked for input more than {MAX_INPUT_ROUNDS} times in one {method}")

    def _send(
        self,
        method: str,
        params: dict[str, Any],
        extra: dict[str, str] | None,
        declared: dict[str, Any] | None = None,
    ) -> tuple[dict[str, Any], int]:
        capabilities = dict(self.responder.capabilities) if self.responder is not None else {}
        if declared is not None:
            capabilities = declared
        body = modern.stamped(params, self.protocol_version, capabilities, client_info())
        headers = {**modern.routing_headers(method, params), **(extra or {})}
        self._last_id += 1
        reply = self.transport.post(
            self.deadline,
            jsonrpc.request(self._last_id, method, body),
            session_id=None,
            protocol_version=self.protocol_version,
            extra_headers=headers,
        )
        if reply.answer is None:
            raise self.malformed("sent no answer")
        return jsonrpc.result_of(reply.answer, self.server), reply.latency_ms
