"""One HTTP leg of an MCP operation over ``requests``: the only module that touches
``requests`` and the only place its exceptions are mapped.

Each leg asks the operation's deadline for a grant before anything is built, sends with
``timeout=(grant, grant)`` (never None or 0), streams the answer under a watchdog that
ends the leg when the operation's budget is spent (the grant rounded up; the watchdog
does not), and stops reading at the size cap. A JSON body and
an event stream are read the same way: the first JSON-RPC response to our request id is
the answer; server requests and notifications before it are skipped. The status line and
headers count against their own allowance (headerlimit.py), read before the body cap
applies; a 3xx is an error decided from them alone, its body never read.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import requests
import urllib3.exceptions

from . import jsonrpc
from .deadline import MINIMUM_LEG_SECONDS, Clock, OperationDeadline
from .endpoint import Endpoint
from .errors import ChallengeError, McpTransportError
from .eventstream import EventStreamDecoder
from .headerlimit import MAX_HEADER_BYTES, MAX_HEADER_LINES, HeaderFlood
from .oauth.challenge import parse_challenge
from .oauth.tokens import OperationTokens
from .sessions import harden
from .text import clean
from .watchdog import LegWatchdog, RefusedPeer

MAX_BODY_BYTES = 2 * 1024 * 1024
# A server that keeps closing its stream early is not followed around forever.
MAX_RESUMPTIONS = 3
_CHUNK_BYTES = 64 * 1024
# Header token characters (RFC 9110) for a credential's header name.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A session id is visible ASCII (MCP transports, "Session Management"); an event id we
# send back as Last-Event-ID must be too, or http.client raises encoding it.
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]{1,512}")

SessionFactory = Callable[[], requests.Session]


def _may_carry_rpc_error(status: int, session_id: str | None) -> bool:
    # A 2026-07-28 server rejects with 400/404/405 and a JSON-RPC error body; 401/403 keep
    # their credential message, a 404 for our session stays session_expired.
    return 400 <= status < 500 and status not in (401, 403) and not (status == 404 and session_id)


def default_session() -> requests.Session:
    # Transport turns off the environment (proxies, .netrc) on every session it is given:
    # a netrc password must not reach an MCP server.
    return requests.Session()


class _EndedEarly(McpTransportError):
    """An event stream that ended before our answer: ``malformed`` unless it can be resumed."""

    def __init__(self, server: str, last_event_id: str | None, retry_ms: int | None) -> None:
        super().__init__(
            "malformed", server, f"MCP server {server!r} ended its event stream without an answer."
        )
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms


@dataclass(frozen=True)
class Reply:
    answer: dict[str, Any] | None
    session_id: str | None
    latency_ms: int


class Transport:
    """The legs of one operation against one server, over one ``requests`` session."""

    def __init__(
        self,
        endpoint: Endpoint,
        session: requests.Session,
        clock: Clock,
        *,
        auth_headers: dict[str, str],
        allow_private_networks: bool,
        addresses: list[str],
        authorizer: OperationTokens | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.server = endpoint.identifier
        self._session = session
        self._clock = clock
        self._allow_private_networks = allow_private_networks
        # Direct, watched, a 3xx never read: the rules every leg's session follows.
        harden(session)
        self.auth_headers = auth_headers
        self._addresses = tuple(addresses)
        # The OAuth token source of this operation, when the server uses OAuth.
        self.authorizer = authorizer

    def post(
        self,
        deadline: OperationDeadline,
        message: dict[str, Any],
        *,
        session_id: str | None,
        protocol_version: str | None,
        extra_headers: dict[str, str] | None = None,
    ) -> Reply:
        """Send one JSON-RPC message; for a request, return the server's answer to it.

        ``extra_headers`` are the 2026-07-28 per-request headers (Mcp-Method, Mcp-Name,
        Mcp-Param-*), built and checked by the caller.
        """
        while True:
            try:
                return self._leg(
                    deadline, "POST", message, session_id, protocol_version, extra_headers=extra_headers
                )
            except _EndedEarly as ended:
                return self._resume(deadline, ended, message["id"], session_id, protocol_version)
            except ChallengeError as challenge:
                if self.authorizer is None:
                    raise
                # A new token or a typed error; bounded by the token source (one refresh per
                # operation, three authorizations), each exchange a leg of this deadline.
                self.auth_headers = bearer_header(
                    self.authorizer.after_challenge(challenge, self._sent_bearer())
                )

    def _sent_bearer(self) -> str | None:
        value = self.auth_headers.get("Authorization", "")
        return value[len("Bearer ") :] if value.startswith("Bearer ") else None

    def _resume(
        self,
        deadline: OperationDeadline,
        ended: _EndedEarly,
        request_id: int,
        session_id: str | None,
        protocol_version: str | None,
    ) -> Reply:
        """Resume a stream the server closed before our answer (GET with Last-Event-ID),
        after the server's retry interval, and only while that fits in the budget."""
        for _attempt in range(MAX_RESUMPTIONS):
            if ended.last_event_id is None or not _VISIBLE_ASCII.fullmatch(ended.last_event_id):
                break  # the server offered no way back into the stream that a header can carry
            wait = (ended.retry_ms or 0) / 1000
            if deadline.remaining_ns() - wait * 1e9 < MINIMUM_LEG_SECONDS * 1e9:
                raise McpTransportError(
                    "malformed",
                    self.server,
                    f"MCP server {self.server!r} closed its event stream before answering; resuming "
                    f"after its retry interval of {wait:g} s would not fit this operation's budget.",
                ) from ended
            time.sleep(wait)
            try:
                return self._leg(
                    deadline,
                    "GET",
                    None,
                    session_id,
                    protocol_version,
                    expect_id=request_id,
                    last_event_id=ended.last_event_id,
                )
            except _EndedEarly as again:
                again.last_event_id = again.last_event_id or ended.last_event_id
                ended = again
        # A plain error for the caller: the private subclass does not leave this module.
        raise McpTransportError(ended.kind, self.server, str(ended)) from ended

    def delete_session(
        self, deadline: OperationDeadline, session_id: str, protocol_version: str | None
    ) -> Reply:
        return self._leg(deadline, "DELETE", None, session_id, protocol_version)

    def _leg(
        self,
        deadline: OperationDeadline,
        method: str,
        message: dict[str, Any] | None,
        session_id: str | None,
        protocol_version: str | None,
        *,
        expect_id: int | None = None,
        last_event_id: str | None = None,
        extra_headers: dict[str, str] | None = None,
    ) -> Reply:
        # Deliberately outside the try below: a spent budget is not a failing server.
        grant = deadline.grant()
        # The socket waits get whole seconds (never 0); the wall clock gets exactly what is
        # left (at least the floor), so rounding up cannot carry the operation past its budget.
        wall_seconds = deadline.remaining_ns() / 1e9
        headers = {"Accept": "application/json, text/event-stream", "Accept-Encoding": "identity"}
        if last_event_id is not None:
            headers["Accept"] = "text/event-stream"
            headers["Last-Event-ID"] = last_event_id
        if extra_headers:
            # Before the credential: an argument-named header can never replace it.
            headers.update(extra_headers)
        headers.update(self.auth_headers)
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if protocol_version is not None:
            headers["MCP-Protocol-Version"] = protocol_version
        body = None
        if message is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(message, separators=(",", ":")).encode()
        request_id = message.get("id") if message is not None and "id" in message else expect_id
        started = self._clock.monotonic_ns()
        with LegWatchdog(
            wall_seconds, allow_private_networks=self._allow_private_networks, addresses=self._addresses
        ) as watchdog:
            try:
                response = self._session.request(
                    method,
                    self.endpoint.url,
                    data=body,
                    headers=headers,
                    timeout=(grant, grant),
                    allow_redirects=False,
                    stream=True,
                )
                try:
                    answer = self._answer(response, request_id, session_id, watchdog, wall_seconds)
                finally:
                    response.close()
            except McpTransportError as exc:
                if watchdog.fired:
                    # Whatever the cut-off answer looked like, the grant ran out first.
                    raise self._timeout(wall_seconds) from exc
                raise
            except HeaderFlood as exc:
                raise McpTransportError(
                    "too_large",
                    self.server,
                    f"MCP server {self.server!r} sent a status line and headers over "
                    f"{MAX_HEADER_BYTES // 1024} KiB or {MAX_HEADER_LINES} lines; reading stopped there.",
                ) from exc
            except RefusedPeer as exc:
                raise McpTransportError(
                    "refused_host",
                    self.server,
                    f"MCP server {self.server!r}: the connection reached a non-public address; "
                    "private networks are not allowed here.",
                ) from exc
            except (
                requests.RequestException,
                urllib3.exceptions.HTTPError,
                http.client.HTTPException,
                OSError,
            ) as exc:
                # Not chained: the library's exception quotes the URL, and a logged
                # traceback would show a secret in its query string. Its type is named
                # in the message instead.
                raise self._failure(exc, watchdog.fired, wall_seconds) from None
        latency_ms = (self._clock.monotonic_ns() - started) // 1_000_000
        issued = response.headers.get("Mcp-Session-Id")
        if issued is not None and not _VISIBLE_ASCII.fullmatch(issued):
            raise McpTransportError(
                "malformed", self.server, f"MCP server {self.server!r} issued an invalid session id."
            )
        return Reply(answer=answer, session_id=issued, latency_ms=latency_ms)

    def _answer(
        self,
        response: requests.Response,
        request_id: object,
        session_id: str | None,
        watchdog: LegWatchdog,
        seconds: float,
    ) -> dict[str, Any] | None:
        status = response.status_code
        if request_id is not None and _may_carry_rpc_error(status, session_id):
            self._raise_rpc_error(response, watchdog, seconds)
        self._check_status(status, response, session_id, expects_body=request_id is not None)
        if request_id is None or not isinstance(request_id, int):
            # A notification (202) or a DELETE: nothing to read. Closing the response
            # unread drops its connection on purpose: a server may still be busy with a
            # notification after answering 202 (the SDK peer is, for ~40 ms: reusing the
            # connection made a local tool call 7x slower), and the next leg must not wait.
            return None
        media = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        chunks = self._chunks(response, watchdog, seconds)
        if media == "text/event-stream":
            decoder = EventStreamDecoder()
            for event in decoder.events(chunks):
                message = jsonrpc.decode(event.data, self.server, "an event")
                if jsonrpc.is_answer(message, request_id):
                    return message  # type: ignore[no-any-return]
            raise _EndedEarly(self.server, decoder.last_event_id, decoder.retry_ms)
        if media == "application/json" or media.endswith("+json"):
            raw = b"".join(chunks)
            if not raw.strip():
                raise McpTransportError(
                    "malformed", self.server, f"MCP server {self.server!r} sent an empty body."
                )
            found = jsonrpc.find_answer(jsonrpc.decode(raw, self.server, "a body"), request_id)
            if found is None:
                raise McpTransportError(
                    "malformed",
                    self.server,
                    f"MCP server {self.server!r} sent JSON that answers no request of ours.",
                )
            return found
        raise McpTransportError(
            "content_type",
            self.server,
            f"MCP server {self.server!r} answered with {clean(media or 'no content type', 60)!s}, "
            "neither JSON nor an event stream (is the URL an MCP endpoint?).",
        )

    def _raise_rpc_error(self, response: requests.Response, watchdog: LegWatchdog, seconds: float) -> None:
        """Raise the JSON-RPC error a 4xx carries (read within the size cap), so its code
        (-32020, -32022, -32601, ...) reaches the era decision and the message; return when
        the body is no JSON-RPC error, leaving the status to ``_check_status``."""
        media = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return
        try:
            body = json.loads(b"".join(self._chunks(response, watchdog, seconds)))
        except (ValueError, RecursionError):
            return
        if isinstance(body, dict) and isinstance(body.get("error"), dict) and "result" not in body:
            raise jsonrpc.error_of(body["error"], self.server, response.status_code)

    def _check_status(
        self, status: int, response: requests.Response, session_id: str | None, *, expects_body: bool
    ) -> None:
        name = self.server
        if 300 <= status < 400:
            # Before any byte of the body is read: closing the response unread (the caller
            # does) drops its connection, so whatever body follows is never read or reused.
            # Location is only quoted, never parsed.
            where = clean(response.headers.get("Location", "elsewhere"))
            raise McpTransportError(
                "redirect",
                name,
                f"MCP server {name!r} redirected (HTTP {status}) to {where}; redirects are not followed.",
            )
        if status == 404 and session_id is not None:
            raise McpTransportError(
                "session_expired", name, f"MCP server {name!r} no longer knows the session (HTTP 404)."
            )
        if status in (401, 403):
            challenge = parse_challenge(response.headers.get("WWW-Authenticate"))
            raise ChallengeError(
                name,
                f"MCP server {name!r} refused the request (HTTP {status}): check its credential.",
                status=status,
                error=challenge.error,
                scopes=challenge.scopes,
                resource_metadata=challenge.resource_metadata,
            )
        if status == 405 and response.request.method == "DELETE":
            return  # the server does not let clients end sessions: allowed by the spec
        if not 200 <= status < 300:
            raise McpTransportError(
                "status", name, f"MCP server {name!r} answered HTTP {status}.", http_status=status
            )
        if expects_body and status in (202, 204):
            raise McpTransportError(
                "malformed", name, f"MCP server {name!r} answered a request with HTTP {status} and no body."
            )

    def _chunks(self, response: requests.Response, watchdog: LegWatchdog, seconds: float) -> Iterator[bytes]:
        total = 0
        while True:
            chunk = response.raw.read1(_CHUNK_BYTES, decode_content=True)
            if not chunk:
                if watchdog.fired:
                    raise self._timeout(seconds)
                return
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                raise McpTransportError(
                    "too_large",
                    self.server,
                    f"MCP server {self.server!r} sent more than {MAX_BODY_BYTES // (1024 * 1024)} MiB; "
                    "reading stopped at the cap.",
                )
            yield chunk

    def _timeout(self, seconds: float) -> McpTransportError:
        return McpTransportError(
            "timeout",
            self.server,
            f"MCP server {self.server!r} did not answer within the {seconds:.1f} s left of this "
            "operation's budget.",
        )

    def _failure(self, exc: Exception, fired: bool, seconds: float) -> McpTransportError:
        """Map an I/O failure, most specific first. The exception's own text is never used:
        it can carry the URL (and a secret in its query string)."""
        if fired or isinstance(exc, requests.Timeout | urllib3.exceptions.TimeoutError | TimeoutError):
            return self._timeout(seconds)
        if isinstance(exc, requests.exceptions.InvalidHeader) and isinstance(
            exc.args[0] if exc.args else None, urllib3.exceptions.InvalidHeader
        ):
            # Raised by urllib3 reading the answer (its only such check there: Content-Length
            # values that disagree), not by a header of ours.
            return McpTransportError(
                "malformed",
                self.server,
                f"MCP server {self.server!r} sent conflicting Content-Length values.",
            )
        if isinstance(
            exc,
            requests.exceptions.InvalidURL
            | requests.exceptions.MissingSchema
            | requests.exceptions.InvalidSchema
            | requests.exceptions.InvalidHeader,
        ):
            return McpTransportError(
                "unreachable", self.server, f"MCP server {self.server!r} has an unusable URL."
            )
        if isinstance(exc, requests.ConnectionError) and not isinstance(
            exc, requests.exceptions.ChunkedEncodingError
        ):
            return McpTransportError(
                "unreachable",
                self.server,
                f"MCP server {self.server!r} could not be reached ({type(exc).__name__}).",
            )
        return McpTransportError(
            "unreachable",
            self.server,
            f"MCP server {self.server!r}: the connection broke during the answer ({type(exc).__name__}).",
        )


def bearer_header(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def auth_headers(endpoint: Endpoint) -> dict[str, str]:
    """The credential as a header, attached per request; fail closed when it cannot be."""
    if not endpoint.needs_credential:
        return {}
    name = endpoint.identifier
    if endpoint.credential is None:
        reason = clean(endpoint.credential_problem or "no credential is configured")
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: its credential is unavailable ({reason}).",
        )
    # requests would quote a bad value back in its exception text: refuse it here, unquoted.
    value = endpoint.credential
    # Latin-1 is all http.client can put in a header; beyond it, it would raise quoting the character.
    if (
        not value
        or value != value.strip()
        or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or ord(c) > 0xFF for c in value)
    ):
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: its credential is not a valid header value.",
        )
    if endpoint.auth_placement == "bearer":
        return {"Authorization": f"Bearer {value}"}
    if not _TOKEN.fullmatch(endpoint.auth_header_name):
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: no valid credential header name is set.",
        )
    return {endpoint.auth_header_name: value}
