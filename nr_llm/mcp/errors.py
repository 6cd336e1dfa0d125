"""Errors of the MCP client.

Exception tree::

    McpTransportError           one type; callers branch on ``kind``
        kind = deadline_exhausted   the operation's budget ran out; the server was not asked
               timeout              a leg outlived its grant on the wire
               unreachable          DNS, connect or connection failure
               refused_host         the host resolves to a private/loopback address
               redirect             a 3xx answer (never followed, its body never read)
               status               any other non-success HTTP status (401/403, 5xx, ...)
               content_type         neither JSON nor an event stream (an HTML page)
               malformed            a body that is not a JSON-RPC answer to our request
               rpc_error            a JSON-RPC error object
               too_large            a body over the size cap, or headers over their allowance
               missing_credential   a configured credential could not be resolved
               session_expired      the server forgot the session (404 with a session id)
               invalid_tool         the tool's listed schema cannot be sent (a bad x-mcp-header);
                                    nothing was sent
               input_required       a 2026-07-28 server asked for input this call cannot give

Configuration errors are not in this tree: they are Django's ``ImproperlyConfigured``
and system checks. The message always names the server's identifier and never a
credential.
"""

from __future__ import annotations

from typing import Any, Literal

ErrorKind = Literal[
    "deadline_exhausted",
    "timeout",
    "unreachable",
    "refused_host",
    "redirect",
    "status",
    "content_type",
    "malformed",
    "rpc_error",
    "too_large",
    "missing_credential",
    "session_expired",
    "invalid_tool",
    "input_required",
]


class McpTransportError(Exception):
    """``http_status`` and ``code`` (the JSON-RPC error code), when the server gave them, let
    the era negotiation tell "this server does not speak that era" from a failure."""

    def __init__(
        self,
        kind: ErrorKind,
        server: str,
        message: str,
        *,
        http_status: int | None = None,
        code: int | None = None,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.server = server
        self.http_status = http_status
        self.code = code
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable with its kind and server, e.g. across a task queue's process boundary.
        extra = {"http_status": self.http_status, "code": self.code, "data": self.data}
        return (_rebuild, (type(self), self.kind, self.server, str(self), extra))

    def __repr__(self) -> str:
        return f"McpTransportError(kind={self.kind!r}, server={self.server!r}, message={str(self)!r})"


def _rebuild(
    cls: type[McpTransportError], kind: ErrorKind, server: str, message: str, extra: dict[str, Any]
) -> McpTransportError:
    return cls(kind, server, message, **extra)
