"""When a request may be sent again, decided only here: never once the server may have run it.

The rule and its reasons: docs/internals.md, "When a request is sent again".
"""

from __future__ import annotations

from ..wire.errors import McpTransportError
from ..wire.legs import idempotent
from . import modern

# Methods that change nothing on the server, so sending one twice does no harm.
REPEATABLE_METHODS = frozenset(
    {
        "server/discover",
        "initialize",
        "tools/list",
        "ping",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "prompts/list",
        "prompts/get",
        "completion/complete",
    }
)

# JSON-RPC codes with which a server refuses a request before running it because it speaks
# the other era (unknown method, missing _meta or session, header mismatch, revision).
REFUSED_BEFORE_RUNNING = frozenset(
    {
        modern.METHOD_NOT_FOUND,
        modern.INVALID_PARAMS,
        modern.INVALID_REQUEST,
        modern.HEADER_MISMATCH,
        modern.UNSUPPORTED_VERSION,
    }
)
# Bare statuses (no JSON-RPC error body) with which a server of the other era refuses a request.
_OTHER_ERA_STATUSES = frozenset({400, 404, 405})


def refused(exc: McpTransportError) -> bool:
    """``exc`` proves the server refused the request without running it."""
    if exc.accepted:
        return False  # a 2xx status line came first: the request may have run
    if exc.kind == "rpc_error":
        # The server's answer to our id, in a body or on the POST's stream: its code says.
        return exc.code in REFUSED_BEFORE_RUNNING
    status = exc.http_status
    if exc.kind == "session_expired":
        return True  # the POST's own 404 for a session the server forgot: it ran nothing
    return exc.kind == "status" and status is not None and 400 <= status < 500


# Failures before the request was written: nothing reached the server.
_NEVER_SENT = frozenset(
    {
        "deadline_exhausted",
        "refused_host",
        "tls",
        "unreachable",
        "invalid_tool",
        "missing_credential",
        "authorization_required",
        "authorization_failed",
    }
)


def may_have_run(exc: McpTransportError) -> bool:
    """The failed request may have been written and no answer proves the server refused it: the
    one verdict behind "may have run" for the client, ``execute``, ``resume`` and the ledger."""
    if exc.accepted:
        return True
    if exc.kind in _NEVER_SENT or not exc.written:
        return False  # e.g. a timeout while connecting: no request reached the server
    return not refused(exc)


def new_session(exc: McpTransportError) -> bool:
    """The request may be sent again in a new session (the specification's MUST for a 404)."""
    return exc.kind == "session_expired" and refused(exc)


def other_era(exc: McpTransportError) -> bool:
    """The request was refused the way a server of the other era refuses (an era code, or a
    bare 400/404/405)."""
    if not refused(exc):
        return False
    return exc.kind == "rpc_error" or (exc.kind == "status" and exc.http_status in _OTHER_ERA_STATUSES)


def repeatable(http_method: str, rpc_method: object) -> bool:
    """The request may be sent twice without harm (a read, or the end of a session)."""
    return idempotent(http_method) or rpc_method in REPEATABLE_METHODS
