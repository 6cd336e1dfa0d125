"""JSON-RPC 2.0 messages of the MCP conversation: build ours, recognise the server's answer."""

from __future__ import annotations

from typing import Any

from ..wire.errors import McpTransportError
from ..wire.text import clean, loads


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method}


def is_answer(message: object, request_id: int) -> bool:
    """True when ``message`` is the response to our request (not a server request or notification)."""
    return (
        isinstance(message, dict)
        and "method" not in message
        and message.get("id") == request_id
        and not isinstance(message.get("id"), bool)
    )


def decode(raw: str | bytes, server: str, what: str) -> Any:
    try:
        # Every answer is decoded here: a lone surrogate in it is replaced, never carried on.
        return loads(raw)
    # RecursionError: a few hundred KB of nested brackets, well under the size cap.
    except (ValueError, RecursionError) as exc:
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent {what} that is not JSON."
        ) from exc


def find_answer(body: object, request_id: int) -> dict[str, Any] | None:
    """Our answer in a JSON body: a single message, or one element of a batch."""
    candidates = body if isinstance(body, list) else [body]
    for candidate in candidates:
        if is_answer(candidate, request_id):
            assert isinstance(candidate, dict)
            return candidate
    return None


def result_of(answer: dict[str, Any], server: str) -> dict[str, Any]:
    """The ``result`` object of an answer; a JSON-RPC error or a body with neither is raised."""
    if "error" in answer:
        raise error_of(answer["error"], server)
    result = answer.get("result")
    if not isinstance(result, dict):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} answered with neither a result object nor an error."
        )
    return result


def error_of(error: object, server: str, http_status: int | None = None) -> McpTransportError:
    """A JSON-RPC error object as ``rpc_error``, its code and data kept for the caller to branch on."""
    code: int | None = None
    data: Any = None
    if isinstance(error, dict):
        raw_code, message = error.get("code"), error.get("message", "")
        detail = f"{clean(message)} (code {clean(raw_code, 20)})"
        code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
        data = error.get("data")
    else:
        detail = clean(error)
    status = f" (HTTP {http_status})" if http_status is not None else ""
    return McpTransportError(
        "rpc_error",
        server,
        f"MCP server {server!r} answered with an error{status}: {detail}.",
        http_status=http_status,
        code=code,
        data=data,
    )
