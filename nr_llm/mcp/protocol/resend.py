"""When a request of an operation may be sent again: the one rule, decided here only.

Exactly once. A server that sent a 2xx status line for a POST has accepted it: from then on
a ``tools/call`` may have run, whatever follows (a stream that ends early, a resumption
refused with 404 or 405, a broken connection, a timeout). The leg machine (wire/legs.py)
marks every failure after that status line ``accepted``, and a stream that cannot be
finished is ``interrupted``; nothing here lets an accepted request out again: no new
session, no re-probe, no era fallback, no second try on a new connection (urllib3 retries
nothing by itself).

A request is sent once more (in a new session, or in the other era) only when the server
refused it in a way that proves it did not run it: its own status line was not 2xx (a 4xx;
a 5xx proves nothing, a gateway may answer it after the tool ran), or its answer was a
JSON-RPC error that a server gives before running anything. Only ``tools/call`` carries the
exactly-once contract; the reads (``server/discover``, ``initialize``, ``tools/list``) follow
the same rule here, and the era probe reads any answer as evidence (client.py).

A pooled connection the server closed while it sat idle fails the next request before any
byte of an answer. That request goes once more, on a new connection, when it may be repeated
(``server/discover``, ``initialize``, ``tools/list``, ``ping``, a GET or a DELETE), and any other
(a ``tools/call``, a notification, an OAuth token request) only when the connection shows it
never left: the write itself failed (the wire's ``on_fresh_connection``, wire/legs.py, told
here whether the request may be repeated). A request that was written and then met a closed
connection may have reached the server: a ``tools/call`` so cut off is ``interrupted``
(transport.py), never resent.

What a failed ``tools/call`` is said to be follows from the same rule (``may_have_run``): it
"could not run" only when it never left this machine or the server's answer proves it refused
before running; in every other case (a timeout before the status line, a 502 or 504, a JSON-RPC
error that is no refusal, an interrupted or accepted call) the model and the ledger are told it
may have run.
"""

from __future__ import annotations

from ..wire.errors import McpTransportError
from ..wire.legs import idempotent
from . import modern

# JSON-RPC methods that change nothing on the server: sent twice, they do no harm.
REPEATABLE_METHODS = frozenset(
    {
        "server/discover",
        "initialize",
        "tools/list",
        "ping",
        # Reads: sending one twice changes nothing on the server.
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


# Failures before the request was written: nothing reached the server. (An ``unreachable``
# request that was written and then cut off is ``interrupted`` for a tools/call, transport.py.)
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
    """The failed request may have run: it was (or may have been) written, and no answer proves
    the server refused it before running. The one verdict behind "could not run" (False) and
    "may have run" (True) for the client, ``execute``, ``resume`` and the ledger."""
    if exc.accepted:
        return True
    if exc.kind in _NEVER_SENT or not exc.written:
        return False  # e.g. a timeout while connecting: no request reached the server
    return not refused(exc)


def new_session(exc: McpTransportError) -> bool:
    """The request may be sent again in a new session (the specification's MUST for a 404)."""
    return exc.kind == "session_expired" and refused(exc)


def other_era(exc: McpTransportError) -> bool:
    """The request may be sent again in the other era: refused the way a server of the other
    era refuses (an era code, or a bare 400/404/405)."""
    if not refused(exc):
        return False
    return exc.kind == "rpc_error" or (exc.kind == "status" and exc.http_status in _OTHER_ERA_STATUSES)


def repeatable(http_method: str, rpc_method: object) -> bool:
    """The request may be sent twice without harm (a read, or the end of a session)."""
    return idempotent(http_method) or rpc_method in REPEATABLE_METHODS
