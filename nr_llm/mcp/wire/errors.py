"""Errors of the MCP client.

Exception tree::

    McpTransportError           one type; callers branch on ``kind``
        kind = deadline_exhausted   the operation's budget ran out; the server was not asked
               timeout              a leg outlived its grant on the wire
               unreachable          DNS, connect or connection failure
               tls                  the TLS handshake failed: a certificate from an issuer not
                                    trusted here, for another name, expired or not yet valid,
                                    or no handshake this client can complete
               refused_host         the host resolves to a private/loopback address, or a
                                    credential would travel over plain http to a public host
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
               input_required       a server asked for input (elicitation) this call cannot give
               resource_not_found   resources/read of a URI the server does not know (-32002,
                                    or SEP-2164's -32602 naming the URI)
               interrupted          the server accepted the request (a 2xx status line), then
                                    its answer was cut off: the connection broke, or the event
                                    stream ended and could not be resumed; or a tools/call was
                                    sent and its connection closed before any answer (not
                                    accepted); a tools/call may have run, and is never sent again
               task_pending         a tools/call answered with a task (protocol/tasks.py) that
                                    had not ended when the operation's budget did; the task is
                                    kept (``TaskError.task``) so polling can resume
               task_lost            the server no longer knows a task it created (tasks/get or
                                    tasks/result answered -32602, or its session is gone)
               task_failed          the task ended ``failed``: the server's JSON-RPC error
               task_cancelled       the task ended ``cancelled``
        ChallengeError          kind = status: a 401/403 with its WWW-Authenticate
                                challenge parsed (error, scopes, resource_metadata)
        AuthorizationError      carries ``reason`` and ``scopes``
            kind = authorization_required  a person must (re)authorize: no grant yet,
                                           refresh refused, more scopes needed, the
                                           authorization server or the URL changed,
                                           attempts spent, no issuer configured
                   authorization_failed    an OAuth exchange went wrong: metadata that
                                           does not fit, an issuer or state mismatch,
                                           an authorization server's error answer, a
                                           grant that could not be read or kept

``accepted`` is the transport's one signal for resending (resend.py): True on every failure
that came after a 2xx status line for the request's POST, whatever its kind, a JSON-RPC error
answering a ``tools/call`` on a 2xx answer included (the server took the call, whatever the
code says). A JSON-RPC error in a 4xx body is not accepted: its code tells whether the request
ran (one with no usable code is read as the bare status, ``status``). ``written`` is False only
when the leg machine saw that the request never fully left (a connection or TLS handshake that
timed out): "could not run" is then true (resend.may_have_run).

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
    "tls",
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
    "resource_not_found",
    "interrupted",
    "task_pending",
    "task_lost",
    "task_failed",
    "task_cancelled",
    "authorization_required",
    "authorization_failed",
]


class McpTransportError(Exception):
    """``http_status`` and ``code`` (the JSON-RPC error code), when the server gave them, let
    the era negotiation tell "this server does not speak that era" from a failure;
    ``accepted`` says the server had accepted the request (a 2xx status line) before it
    failed, so it may have run it."""

    def __init__(
        self,
        kind: ErrorKind,
        server: str,
        message: str,
        *,
        http_status: int | None = None,
        code: int | None = None,
        data: Any = None,
        accepted: bool = False,
        written: bool = True,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.server = server
        self.http_status = http_status
        self.code = code
        self.data = data
        # Set by the leg machine (wire/legs.py) on a failure after a 2xx status line.
        self.accepted = accepted
        # Cleared by the leg machine when the request was never handed whole to the socket;
        # True unless that is known (a request may have left).
        self.written = written

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable with its kind and server, e.g. across a task queue's process boundary.
        extra = {
            "http_status": self.http_status,
            "code": self.code,
            "data": self.data,
            "accepted": self.accepted,
            "written": self.written,
        }
        return (_rebuild, (type(self), self.kind, self.server, str(self), extra))

    def __repr__(self) -> str:
        return f"McpTransportError(kind={self.kind!r}, server={self.server!r}, message={str(self)!r})"


def _rebuild(
    cls: type[McpTransportError], kind: ErrorKind, server: str, message: str, extra: dict[str, Any]
) -> McpTransportError:
    return cls(kind, server, message, **extra)


class ChallengeError(McpTransportError):
    """A 401 or 403 from the MCP server, with what its ``WWW-Authenticate`` asked for.

    Remains kind ``status`` so that a server with a static credential fails as before;
    the OAuth token source reads the challenge to refresh, step up or discover.
    """

    def __init__(
        self,
        server: str,
        message: str,
        *,
        status: int,
        error: str | None = None,
        scopes: tuple[str, ...] | None = None,
        resource_metadata: str | None = None,
    ) -> None:
        super().__init__("status", server, message, http_status=status)
        self.status = status
        self.error = error
        # None: the challenge named no scope (not the same as an empty scope list).
        self.scopes = scopes
        self.resource_metadata = resource_metadata

    def __reduce__(self) -> Any:
        return (
            _rebuild_challenge,
            (self.server, str(self), self.status, self.error, self.scopes, self.resource_metadata),
        )


def _rebuild_challenge(
    server: str,
    message: str,
    status: int,
    error: str | None,
    scopes: tuple[str, ...] | None,
    resource_metadata: str | None,
) -> ChallengeError:
    return ChallengeError(
        server, message, status=status, error=error, scopes=scopes, resource_metadata=resource_metadata
    )


AuthorizationReason = Literal[
    # authorization_required
    "not_authorized",  # no grant is stored for this server
    "refresh_refused",  # the authorization server refused the refresh token
    "insufficient_scope",  # the server asks for scopes beyond the grant (step-up)
    "server_changed",  # another authorization server or token endpoint than the pinned one
    "url_changed",  # the grant was issued for another URL than the server's current one
    "attempts_exhausted",  # three authorizations in one operation did not satisfy the server
    "issuer_not_configured",  # a pre-registered client names no authorization server (issuer)
    # authorization_failed
    "discovery",  # no usable protected-resource or authorization-server metadata
    "resource_mismatch",  # the metadata's resource does not cover the MCP URL
    "issuer_mismatch",  # metadata (or a callback's iss) names another issuer
    "state_mismatch",  # a callback's state is not the one this authorization sent
    "registration",  # dynamic client registration failed
    "token_error",  # the token endpoint refused a code or client credentials
    "unsupported",  # the authorization server cannot do what the configuration asks
    "grant_store",  # the stored grant could not be read, or a renewed one could not be kept
]


class AuthorizationError(McpTransportError):
    """An OAuth problem: ``reason`` says which, ``scopes`` what an operator must grant."""

    def __init__(
        self,
        kind: ErrorKind,
        server: str,
        message: str,
        *,
        reason: AuthorizationReason,
        scopes: tuple[str, ...] = (),
        resource_metadata: str | None = None,
    ) -> None:
        super().__init__(kind, server, message)
        self.reason: AuthorizationReason = reason
        self.scopes = scopes
        # Where the server's challenge said discovery starts (attacker text: vetted when used).
        self.resource_metadata = resource_metadata

    def __reduce__(self) -> Any:
        return (
            _rebuild_authorization,
            (self.kind, self.server, str(self), self.reason, self.scopes, self.resource_metadata),
        )

    def __repr__(self) -> str:
        return (
            f"AuthorizationError(kind={self.kind!r}, server={self.server!r}, reason={self.reason!r}, "
            f"scopes={self.scopes!r}, message={str(self)!r})"
        )


def _rebuild_authorization(
    kind: ErrorKind,
    server: str,
    message: str,
    reason: AuthorizationReason,
    scopes: tuple[str, ...],
    resource_metadata: str | None,
) -> AuthorizationError:
    return AuthorizationError(
        kind, server, message, reason=reason, scopes=scopes, resource_metadata=resource_metadata
    )
