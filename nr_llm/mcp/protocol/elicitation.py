"""Elicitation: a server asks the site for input in the middle of a call.

Two ways it arrives, one way it is answered:

- the handshake era: an ``elicitation/create`` request on the call's event stream (or on the
  session's GET stream, where a server sends requests not tied to a call); the answer is POSTed
  back as a JSON-RPC response, and the call's answer follows on its stream;
- the 2026-07-28 era (multi round-trip requests): an ``input_required`` result whose
  ``inputRequests`` are answered by sending the request again with ``inputResponses``.

Both reach the same ``InputResponder.answer`` (modern_conversation.py). ``Elicitor`` is the one
this package offers: it wraps a site's callable, applies the requested schema's defaults to an
accepted answer (SEP-1034: a field the person left alone has its default), and turns a callable
that fails into ``cancel``. A URL-mode request hands the site its URL: the package never opens it.

The client declares the ``elicitation`` capability only when a responder is given; without one
it declares none, and a request it receives anyway is refused with a JSON-RPC error (the server
was never told it could ask).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..wire.errors import McpTransportError
from ..wire.text import MESSAGE_LIMIT, NAME_LIMIT, clean

logger = logging.getLogger("nr_llm.mcp")

ELICIT = "elicitation/create"
Action = Literal["accept", "decline", "cancel"]
# JSON-RPC's "method not found": the answer to a request for a capability never declared.
NOT_DECLARED = -32601
# "Missing required client capability" (2026-07-28; the SDKs send it in both eras).
MISSING_CAPABILITY = -32021
_URL_LIMIT = 2_048


@dataclass(frozen=True)
class ElicitationRequest:
    """What the server asks: ``mode`` "form" (fill ``schema``) or "url" (send a person to
    ``url``, which this package never opens)."""

    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: dict[str, Any] = field(default_factory=dict)
    url: str = ""
    elicitation_id: str = ""


@dataclass(frozen=True)
class ElicitationAnswer:
    action: Action
    content: dict[str, Any] | None = None

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> ElicitationAnswer:
        return cls("accept", dict(content or {}))

    @classmethod
    def decline(cls) -> ElicitationAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationAnswer:
        return cls("cancel")


Respond = Callable[[ElicitationRequest], ElicitationAnswer | None]


class Elicitor:
    """An ``InputResponder`` from a site's ``respond(request) -> ElicitationAnswer``.

    ``respond`` returning None means "no answer now": the server is told ``cancel`` and the
    request is kept in ``unanswered``, so the caller can report ``needs_input``.
    """

    capabilities: dict[str, Any]

    def __init__(self, respond: Respond, server: str = "", *, url_mode: bool = True) -> None:
        self.respond = respond
        self.server = server
        self.capabilities = {"elicitation": {"form": {}, **({"url": {}} if url_mode else {})}}
        self.unanswered: list[ElicitationRequest] = []
        self.answered: list[tuple[ElicitationRequest, ElicitationAnswer]] = []

    def answer(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        """The 2026 era's ``inputResponses``: one answer per elicitation asked for."""
        responses: dict[str, Any] = {}
        for key, request in input_requests.items():
            if isinstance(request, dict) and request.get("method") == ELICIT:
                params = request.get("params")
                responses[key] = self.result_for(params if isinstance(params, dict) else {})
        return responses

    def result_for(self, params: dict[str, Any]) -> dict[str, Any]:
        """The ``ElicitResult`` for one request's params."""
        request = _request_of(params, self.server)
        try:
            given = self.respond(request)
        except Exception:
            # A reporting boundary: the site's callable failing must not break the call.
            logger.warning("elicitation responder failed; answering cancel", exc_info=True)
            given = ElicitationAnswer.cancel()
        if given is None:
            self.unanswered.append(request)
            given = ElicitationAnswer.cancel()
        if given.action == "accept" and request.mode == "form":
            given = ElicitationAnswer("accept", with_defaults(request.schema, given.content or {}))
        self.answered.append((request, given))
        result: dict[str, Any] = {"action": given.action}
        if given.action == "accept" and request.mode == "form":
            result["content"] = given.content or {}
        return result


def with_defaults(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """SEP-1034: every property the answer leaves out that declares a default gets it."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    filled = dict(content)
    if isinstance(properties, dict):
        for name, spec in properties.items():
            if name not in filled and isinstance(spec, dict) and "default" in spec:
                filled[name] = spec["default"]
    return filled


def _request_of(params: dict[str, Any], server: str) -> ElicitationRequest:
    mode: Literal["form", "url"] = "url" if params.get("mode") == "url" else "form"
    schema = params.get("requestedSchema")
    url = params.get("url")
    elicitation_id = params.get("elicitationId")
    return ElicitationRequest(
        server=server,
        message=clean(params.get("message", ""), MESSAGE_LIMIT * 5),
        mode=mode,
        schema=schema if isinstance(schema, dict) else {},
        url=url[:_URL_LIMIT] if mode == "url" and isinstance(url, str) else "",
        elicitation_id=clean(elicitation_id, 200) if isinstance(elicitation_id, str) else "",
    )


def needs_input(exc: McpTransportError, tool: str) -> McpTransportError | None:
    """A server's refusal for want of the elicitation capability (-32021, "missing required
    client capability") as ``input_required``: the caller passed no responder, and its loop
    branches on the kind (``needs_input``) instead of reading a protocol error."""
    if exc.kind != "rpc_error" or exc.code != MISSING_CAPABILITY:
        return None
    may_have_run = " The tool may have run; the call is not sent again." if exc.accepted else ""
    return McpTransportError(
        "input_required",
        exc.server,
        f"MCP server {exc.server!r} needs input (elicitation) to run tool {clean(tool, NAME_LIMIT)!r}, "
        f"and this call gave no responder to answer it.{may_have_run}",
        http_status=exc.http_status,
        code=exc.code,
        data=exc.data,
        accepted=exc.accepted,
    )


def response_to(message: dict[str, Any], responder: Any) -> dict[str, Any]:
    """The JSON-RPC response to a server's request in the handshake era: an elicitation answered
    through ``responder`` (an ``InputResponder``), anything else (or any request when no
    responder declared the capability) refused as a method this client does not serve."""
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params")
    if method == ELICIT and responder is not None and "elicitation" in getattr(responder, "capabilities", {}):
        answers = responder.answer(
            {"request": {"method": ELICIT, "params": params if isinstance(params, dict) else {}}}
        )
        result = answers.get("request")
        if isinstance(result, dict):
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
    logger.info("MCP server request %s refused: this client did not declare it", clean(method, 60))
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": NOT_DECLARED, "message": f"the client does not serve {clean(method, 60)}"},
    }
