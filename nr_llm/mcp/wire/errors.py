"""Errors of the MCP client: one type, and callers branch on ``kind``.

Exception tree::

    McpTransportError
        kind = deadline_exhausted   the budget ran out before the server was asked
               timeout              a request outlived its share of the budget
               unreachable          DNS, connect or connection failure
               tls                  the TLS handshake failed
               refused_host         a private address, or a credential over plain http
               redirect             a 3xx answer (never followed)
               status               any other non-success HTTP status
               content_type         neither JSON nor an event stream
               malformed            not a JSON-RPC answer to our request
               rpc_error            a JSON-RPC error object
               too_large            a body or headers over their cap
               missing_credential   a configured credential could not be resolved
               session_expired      the server forgot the session (404)
               invalid_tool         the tool's schema cannot be sent; nothing was sent
               input_required       the server asked for input this call cannot give
               resource_not_found   resources/read of an unknown URI
               interrupted          the answer was cut off; a tools/call may have run
               task_pending         the budget ended before the task; ``TaskError.task`` resumes it
               task_lost            the server no longer knows its task
               task_failed          the task ended ``failed``
               task_cancelled       the task ended ``cancelled``
        ChallengeError          kind = status: a 401/403 with its WWW-Authenticate parsed
        AuthorizationError      kind = authorization_required (a person must authorize) or
                                       authorization_failed (an OAuth exchange went wrong)

``accepted`` (a 2xx status line came before the failure) and ``written`` decide what may be
sent again (resend.py). Configuration errors are Django's ``ImproperlyConfigured`` instead.
Messages name the server, never a credential.
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
    """``http_status`` and ``code`` let the era negotiation tell "speaks the other era" from a
    failure."""

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
        self.accepted = accepted
        # True unless the request is known never to have left whole.
        self.written = written

    def __reduce__(self) -> tuple[Any, ...]:
        # A task queue pickles it across processes.
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
    """Kind ``status``, so a server with a static credential fails as before; the OAuth token
    source reads the challenge."""

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
        # None (no scope named) differs from an empty list.
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
        # The server's text: vetted when used.
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
