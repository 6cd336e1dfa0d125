"""The MCP exchange over Streamable HTTP: one POST per JSON-RPC message, its answer read.

Every leg is sent by wire/legs.py (TLS, host gate, watchdog, caps,
the exception map); this module builds the MCP request (headers, session, protocol version,
the credential), reads the answer and applies the protocol's rules to it. The first JSON-RPC
response to our request id in a JSON body or an event stream is the answer; server requests
and notifications before it are skipped. A 401/403 is read as an OAuth challenge and handed to
the operation's token source (the oauth package, through its public face).

Exactly once: wire/legs.py marks every failure after a 2xx status line ``accepted``. A POST
so accepted and then cut off (the connection broke, or its event stream ended and could not be
resumed: no event id, a resumption refused with 404 or 405, timed out, broken, or not fitting
the budget) is ``interrupted``, and a tools/call's message says the tool may have run;
resend.py lets no accepted request be sent again.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..oauth import challenge_error
from ..wire.connection import ConnectionSettings
from ..wire.deadline import MINIMUM_LEG_SECONDS, Clock, OperationDeadline
from ..wire.errors import ChallengeError, McpTransportError
from ..wire.eventstream import EventStreamDecoder
from ..wire.legs import LegMachine, Peer, Reading, Unanswered
from ..wire.redaction import Secrets
from ..wire.sealed import Sealed
from ..wire.text import NAME_LIMIT, clean
from . import jsonrpc, resend, telemetry
from .endpoint import Endpoint

if TYPE_CHECKING:
    import requests

    from ..oauth import OperationTokens

# A server that keeps closing its stream early is not followed around forever.
MAX_RESUMPTIONS = 3
# Header token characters (RFC 9110) for a credential's header name.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A session id is visible ASCII (MCP transports, "Session Management"); an event id we
# send back as Last-Event-ID must be too, or http.client raises encoding it.
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]{1,512}")


def _may_carry_rpc_error(status: int, session_id: str | None) -> bool:
    # A 2026-07-28 server rejects with 400/404/405 and a JSON-RPC error body; 401/403 keep
    # their credential message, a 404 for our session stays session_expired.
    return 400 <= status < 500 and status not in (401, 403) and not (status == 404 and session_id)


class _EndedEarly(McpTransportError):
    """An event stream that ended before our answer: resumed, or ``interrupted`` (it never
    leaves this module)."""

    def __init__(self, server: str, last_event_id: str | None, retry_ms: int | None) -> None:
        super().__init__(
            "interrupted", server, f"MCP server {server!r} ended its event stream without an answer."
        )
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms


# What a failed resumption was, for the message of the ``interrupted`` it ends in.
_RESUME_FAILURES = {
    "deadline_exhausted": "the budget was spent",
    "timeout": "no answer in time",
    "unreachable": "no connection",
    "tls": "the TLS handshake failed",
    "redirect": "a redirect, not followed",
    "too_large": "an answer over the size cap",
    "content_type": "an answer that is no event stream",
    "malformed": "a malformed answer",
}


def _resume_failure(failed: McpTransportError) -> str:
    if failed.kind == "session_expired":
        return "HTTP 404: the server no longer knows the session"
    if failed.http_status is not None:
        return f"HTTP {failed.http_status}"
    return _RESUME_FAILURES.get(failed.kind, failed.kind.replace("_", " "))


def _what(message: dict[str, Any]) -> tuple[str, str]:
    """How a message reads in an error after acceptance, and what that means for it."""
    method = message.get("method")
    if method == "tools/call":
        params = message.get("params") or {}
        name = clean(params.get("name"), NAME_LIMIT)
        return f"the call of tool {name!r}", " The tool may have run; the call is not sent again."
    return f"the {clean(method, 40)} request", ""


def _interrupted(server: str, message: dict[str, Any], detail: str) -> McpTransportError:
    """``interrupted``: the server accepted ``message`` and its answer was cut off (``detail``)."""
    what, meaning = _what(message)
    return McpTransportError(
        "interrupted",
        server,
        f"MCP server {server!r} accepted {what}, but its answer was cut off: {detail}.{meaning}",
        accepted=True,
    )


def _unanswered(server: str, message: dict[str, Any]) -> McpTransportError:
    """A tools/call whose connection closed after it was written and before any answer:
    ``interrupted``, not accepted (no status line came), and never sent again."""
    what, meaning = _what(message)
    return McpTransportError(
        "interrupted",
        server,
        f"MCP server {server!r} was sent {what}, but the connection closed before any answer.{meaning}",
    )


def _after_acceptance(server: str, message: dict[str, Any], exc: McpTransportError) -> McpTransportError:
    """A POST's failure after its 2xx status line: a broken connection is ``interrupted``; any
    other kind stays, saying (for a tools/call) that the tool may have run."""
    if exc.kind == "unreachable":
        return _interrupted(server, message, "the connection broke during the answer")
    _, meaning = _what(message)
    return McpTransportError(
        exc.kind,
        server,
        f"{exc}{meaning}",
        http_status=exc.http_status,
        code=exc.code,
        data=exc.data,
        accepted=True,
    )


@dataclass(frozen=True)
class Reply:
    answer: dict[str, Any] | None
    session_id: str | None
    latency_ms: int


class Transport:
    """The MCP legs of one operation against one server, over one ``requests`` session."""

    def __init__(
        self,
        endpoint: Endpoint,
        session: requests.Session,
        clock: Clock,
        *,
        auth_headers: dict[str, str],
        connection: ConnectionSettings,
        addresses: list[str],
        authorizer: OperationTokens | None = None,
        secrets: Secrets | None = None,
    ) -> None:
        self.endpoint = endpoint
        # The operation's credentials, masked in every answer as it is decoded (redaction.py).
        self.secrets = secrets or Secrets()
        self.server = endpoint.identifier
        self._peer = Peer(endpoint.identifier)
        self._legs = LegMachine(session, connection, clock=clock)
        self._clock = clock
        self.auth_headers = auth_headers
        self._addresses = tuple(addresses)
        # The OAuth token source of this operation, when the server uses OAuth.
        self.authorizer = authorizer
        # Where a server's own request on an event stream goes (handshake-era elicitation);
        # None: such requests are skipped, as before a responder was given.
        self.on_server_request: Callable[[dict[str, Any]], None] | None = None
        # Where a server's notification on an event stream goes (a call's progress); None: skipped.
        self.on_notification: Callable[[dict[str, Any]], None] | None = None

    @telemetry.traced_request
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
                reply = self._leg(
                    deadline, "POST", message, session_id, protocol_version, extra_headers=extra_headers
                )
            except _EndedEarly as ended:
                reply = self._resume(deadline, ended, message, session_id, protocol_version)
            except Unanswered as unanswered:
                if message.get("method") != "tools/call":
                    raise
                raise _unanswered(self.server, message) from unanswered
            except ChallengeError as challenge:
                if self.authorizer is None:
                    raise
                # A 401/403 status line refused the request before it ran (resend.refused), so
                # it may go again: with a new token or a typed error; bounded by the token source
                # (one refresh per operation, three authorizations), each a leg of this deadline.
                self.auth_headers = self.authorizer.authorization(
                    self.authorizer.after_challenge(challenge, self.sent_bearer)
                )
                continue
            except McpTransportError as exc:
                if not exc.accepted:
                    raise
                raise _after_acceptance(self.server, message, exc) from exc
            return self._taken(message, reply)

    def _taken(self, message: dict[str, Any], reply: Reply) -> Reply:
        """``reply`` came after a 2xx status line (or a resumed stream of one): a JSON-RPC error
        answering a tools/call is then ``accepted``. The server took the call (an event stream
        may have said it was running), so no fallback may send it again, whatever the code."""
        answer = reply.answer
        if message.get("method") == "tools/call" and answer is not None and "error" in answer:
            refused = jsonrpc.error_of(answer["error"], self.server)
            raise _after_acceptance(self.server, message, refused)
        return reply

    @property
    def sent_bearer(self) -> str | None:
        """The OAuth access token this operation sends, if any (a static credential is the
        Django side's to mask: it knows it before the operation). Read-only data, not a leg:
        nothing public on the transport can stop one."""
        if self.authorizer is None:
            return None
        scheme, _, token = self.auth_headers.get("Authorization", "").partition(" ")
        return token if scheme in ("Bearer", "DPoP") and token else None

    def _resume(
        self,
        deadline: OperationDeadline,
        ended: _EndedEarly,
        message: dict[str, Any],
        session_id: str | None,
        protocol_version: str | None,
    ) -> Reply:
        """Resume a stream the server closed before our answer (GET with Last-Event-ID), after
        the server's retry interval, and only while that fits in the budget.

        The POST was accepted, so it may have run: a resumption that cannot be made, is refused
        (404, 405, ...), fails or ends early again is ``interrupted``, never a reason for the
        caller to send the request again (resend.py)."""

        def cut_off(why: str) -> McpTransportError:
            return _interrupted(self.server, message, f"its event stream ended before the answer{why}")

        for _attempt in range(MAX_RESUMPTIONS):
            if ended.last_event_id is None or not _VISIBLE_ASCII.fullmatch(ended.last_event_id):
                # The server offered no way back into the stream that a header can carry.
                raise cut_off(", with no event id to resume from") from ended
            wait = (ended.retry_ms or 0) / 1000
            if deadline.remaining_ns() - wait * 1e9 < MINIMUM_LEG_SECONDS * 1e9:
                raise cut_off(
                    f", and resuming after its retry interval of {wait:g} s would not fit this "
                    "operation's budget"
                ) from ended
            time.sleep(wait)
            try:
                return self._leg(
                    deadline,
                    "GET",
                    None,
                    session_id,
                    protocol_version,
                    expect_id=message["id"],
                    last_event_id=ended.last_event_id,
                )
            except _EndedEarly as again:
                again.last_event_id = again.last_event_id or ended.last_event_id
                ended = again
            except McpTransportError as failed:
                raise cut_off(f", and resuming it failed ({_resume_failure(failed)})") from failed
        raise cut_off(f", and again after each of {MAX_RESUMPTIONS} resumptions") from ended

    def _dispatch(self, message: object) -> None:
        """A server's request on a stream (method and id) goes to ``on_server_request``, a
        notification (method, no id) to ``on_notification``."""
        if (
            self.on_notification is not None
            and isinstance(message, dict)
            and isinstance(message.get("method"), str)
            and "id" not in message
        ):
            self.on_notification(self._masked(message))
            return
        if (
            self.on_server_request is not None
            and isinstance(message, dict)
            and isinstance(message.get("method"), str)
            and "id" in message
        ):
            self.on_server_request(self._masked(message))

    def delete_session(
        self, deadline: OperationDeadline, session_id: str, protocol_version: str | None
    ) -> Reply:
        return self._leg(deadline, "DELETE", None, session_id, protocol_version)

    def listen(
        self,
        deadline: OperationDeadline,
        method: str,
        message: dict[str, Any] | None,
        on_message: Callable[[Any], None],
        *,
        session_id: str | None,
        protocol_version: str | None,
        extra_headers: dict[str, str] | None = None,
        opened: Callable[[], None] | None = None,
    ) -> None:
        """Open a stream (the handshake era's GET, a 2026 ``subscriptions/listen``) and hand
        each JSON-RPC message on it, decoded and masked, to ``on_message`` until the server ends
        it; the deadline's grant bounds it like any leg (a ``timeout`` at its end). ``opened``
        is called once the stream's head is in, so a caller can send work the server answers
        there. Sent by wire/legs.py like every leg: host gate, caps, redirects refused, one error map.

        Two callers: a watch (change notifications, listen.py) and a call with a responder
        (the server's requests on the session's GET stream, handshake.py)."""

        def read(reading: Reading) -> tuple[None, None, int]:
            if message is not None and _may_carry_rpc_error(reading.status, session_id):
                self._raise_rpc_error(reading)
            self._check_status(reading, session_id, expects_body=True)
            if reading.is_json and message is not None:
                # A plain answer instead of a stream: an error (unknown method), or a result
                # that ends the subscription at once.
                found = jsonrpc.find_answer(
                    jsonrpc.decode(reading.body(), self.server, "a body"), message["id"]
                )
                if isinstance(found, dict) and "error" in found:
                    raise jsonrpc.error_of(self._masked(found["error"]), self.server, reading.status)
                return None, None, 0
            if reading.media != "text/event-stream":
                raise reading.wrong_media("not an event stream")
            if opened is not None:
                opened()
            for event in EventStreamDecoder().events(reading.chunks()):
                if event.data.strip():
                    on_message(self._masked(jsonrpc.decode(event.data, self.server, "an event")))
            return None, None, 0

        body = None if message is None else json.dumps(message, separators=(",", ":")).encode()
        while True:
            headers = Sealed(
                {"Accept": "text/event-stream", "Accept-Encoding": "identity", **(extra_headers or {})}
            )
            self._credentials(headers, method, session_id, protocol_version)
            if message is not None:
                headers["Accept"] = "application/json, text/event-stream"
                headers["Content-Type"] = "application/json"
            try:
                self._legs.send(
                    deadline,
                    self._peer,
                    method,
                    self.endpoint.url,
                    read,
                    headers=headers,
                    body=body,
                    addresses=self._addresses,
                    quote_location=True,
                    repeatable=False,
                )
            except ChallengeError as challenge:
                if self.authorizer is None:
                    raise
                # As on a POST: a 401/403 status line opened no stream, so asking again (a
                # nonce, a renewed token) is safe; the token source bounds how often.
                self.auth_headers = self.authorizer.authorization(
                    self.authorizer.after_challenge(challenge, self.sent_bearer)
                )
                continue
            return

    def _credentials(
        self, headers: dict[str, str], method: str, session_id: str | None, protocol_version: str | None
    ) -> None:
        """Add what every leg to the server carries: the credential (after any caller's header,
        so none can replace it), a DPoP proof made for this very leg (none for Bearer), the
        session and the protocol version. One function for the POSTs and the GET stream, so
        the stream is never sent with a bound token and no proof."""
        headers.update(self.auth_headers)
        if self.authorizer is not None:
            headers.update(self.authorizer.proof(method, self.endpoint.url, self.sent_bearer))
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if protocol_version is not None:
            headers["MCP-Protocol-Version"] = protocol_version

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
        # Sealed: the credential is among them, and a failing leg's frames keep this local.
        headers = Sealed({"Accept": "application/json, text/event-stream", "Accept-Encoding": "identity"})
        if last_event_id is not None:
            headers["Accept"] = "text/event-stream"
            headers["Last-Event-ID"] = last_event_id
        if extra_headers:
            # Before the credential: an argument-named header can never replace it.
            headers.update(extra_headers)
        self._credentials(headers, method, session_id, protocol_version)
        body = None
        if message is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(message, separators=(",", ":")).encode()
        # Only a request expects an answer: our JSON-RPC response to a server's request has an
        # id too, and is answered with a bare 202.
        is_request = message is not None and "id" in message and "method" in message
        request_id = message.get("id") if message is not None and is_request else expect_id

        def read(reading: Reading) -> tuple[dict[str, Any] | None, str | None, int]:
            answer = self._answer(reading, request_id, session_id)
            issued = reading.headers.get("Mcp-Session-Id")
            if issued is not None and not _VISIBLE_ASCII.fullmatch(issued):
                # Inside the leg: its connection is closed, not kept for the next leg; the leg
                # machine marks it accepted (a 2xx came: the request may have run).
                raise McpTransportError(
                    "malformed", self.server, f"MCP server {self.server!r} issued an invalid session id."
                )
            latency_ms = (self._clock.monotonic_ns() - reading.started_ns) // 1_000_000
            return answer, issued, latency_ms

        answer, issued, latency_ms = self._legs.send(
            deadline,
            self._peer,
            method,
            self.endpoint.url,
            read,
            headers=headers,
            body=body,
            addresses=self._addresses,
            quote_location=True,
            repeatable=resend.repeatable(method, message.get("method") if message is not None else None),
        )
        return Reply(answer=answer, session_id=issued, latency_ms=latency_ms)

    def _answer(self, reading: Reading, request_id: object, session_id: str | None) -> dict[str, Any] | None:
        status = reading.status
        if request_id is not None and _may_carry_rpc_error(status, session_id):
            self._raise_rpc_error(reading)
        self._check_status(reading, session_id, expects_body=request_id is not None)
        if request_id is None or not isinstance(request_id, int):
            # A notification (202) or a DELETE: nothing to read here. wire/legs.py
            # reads the empty body (Reading.settle), so the connection serves the next leg.
            return None
        if reading.media == "text/event-stream":
            decoder = EventStreamDecoder()
            for event in decoder.events(reading.chunks()):
                message = jsonrpc.decode(event.data, self.server, "an event")
                if jsonrpc.is_answer(message, request_id):
                    return self._masked(message)  # type: ignore[no-any-return]
                self._dispatch(message)
            raise _EndedEarly(self.server, decoder.last_event_id, decoder.retry_ms)
        if reading.is_json:
            raw = reading.body()
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
            return self._masked(found)  # type: ignore[no-any-return]
        raise reading.wrong_media("neither JSON nor an event stream (is the URL an MCP endpoint?)")

    def _raise_rpc_error(self, reading: Reading) -> None:
        """Raise the JSON-RPC error a 4xx carries (read within the size cap), so its code
        (-32020, -32022, -32601, ...) reaches the era decision and the message; return when
        the body is no JSON-RPC error, leaving the status to ``_check_status``."""
        if reading.media != "application/json":
            return
        try:
            body = json.loads(reading.body())
        except (ValueError, RecursionError):
            return
        if isinstance(body, dict) and isinstance(body.get("error"), dict) and "result" not in body:
            error = jsonrpc.error_of(self._masked(body["error"]), self.server, reading.status)
            if error.code is None:
                # No usable code says no more than the status line: read it as a bare status
                # (a 400/404/405 then reads as the other era's refusal, as without a body).
                raise McpTransportError("status", self.server, str(error), http_status=reading.status)
            raise error

    def _masked(self, value: Any) -> Any:
        """``value`` decoded from the server, with every credential of the operation masked."""
        try:
            return self.secrets.mask_json(value)
        except RecursionError:
            raise McpTransportError(
                "malformed", self.server, f"MCP server {self.server!r} sent JSON nested too deep."
            ) from None

    def _check_status(self, reading: Reading, session_id: str | None, *, expects_body: bool) -> None:
        name = self.server
        status = reading.status
        if status == 404 and session_id is not None:
            raise McpTransportError(
                "session_expired", name, f"MCP server {name!r} no longer knows the session (HTTP 404)."
            )
        if status in (401, 403):
            raise challenge_error(name, status, reading.headers)
        if status == 405 and reading.method == "DELETE":
            return  # the server does not let clients end sessions: allowed by the spec
        if not 200 <= status < 300:
            hint = _NOT_STREAMABLE_HTTP if status == 405 and reading.method == "POST" else ""
            raise McpTransportError(
                "status", name, f"MCP server {name!r} answered HTTP {status}.{hint}", http_status=status
            )
        if expects_body and status in (202, 204):
            raise McpTransportError(
                "malformed", name, f"MCP server {name!r} answered a request with HTTP {status} and no body."
            )


#: A POST refused as a method is what a legacy HTTP+SSE endpoint (the 2024-11-05 transport, GET
#: for its stream) answers; a stdio server has no URL at all. Both need a bridge, and saying so
#: spares the operator reading "405" as a fault of this client.
_NOT_STREAMABLE_HTTP = (
    " It does not take POST requests: the URL may be a legacy HTTP+SSE endpoint (often ending in"
    " /sse), and nr-llm speaks Streamable HTTP only. Use the server's Streamable HTTP URL (often"
    " ending in /mcp), or expose a stdio or HTTP+SSE server through a bridge that serves"
    " Streamable HTTP."
)


def refuse_clear_text(endpoint: Endpoint, carries_credential: bool) -> None:
    """``refused_host`` for a credential (a static one or an OAuth token) bound for an
    http:// URL: where private networks are not allowed, every host that passes the gate is
    public, and a credential crosses the internet only inside TLS. The OAuth legs refuse
    http:// for themselves (oauth/legs.py ``vet_url``) with the same kind."""
    try:
        scheme = urlsplit(endpoint.url).scheme
    except ValueError:
        return  # an unusable URL: the host gate says so, naming no part of it
    if not carries_credential or scheme != "http":
        return
    name = endpoint.identifier
    raise McpTransportError(
        "refused_host",
        name,
        f"MCP server {name!r} was not contacted: its URL is plain http://, and a credential is "
        "sent only over https to a public host (private networks are not allowed here).",
    )


def auth_headers(endpoint: Endpoint) -> dict[str, str]:
    """The credential as a header (sealed: out of every repr), attached per request; fail
    closed when it cannot be."""
    if not endpoint.needs_credential:
        return Sealed()
    name = endpoint.identifier
    if endpoint.credential is None:
        reason = clean(endpoint.credential_problem or "no credential is configured")
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: its credential is unavailable ({reason}).",
        )
    # requests would quote a bad value back in its exception text: refuse it here, unquoted
    # (and with no local of this frame holding it).
    if not _is_header_value(endpoint.credential):
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: its credential is not a valid header value.",
        )
    if endpoint.auth_placement == "bearer":
        return Sealed({"Authorization": f"Bearer {endpoint.credential}"})
    if not _TOKEN.fullmatch(endpoint.auth_header_name):
        raise McpTransportError(
            "missing_credential",
            name,
            f"MCP server {name!r} was not contacted: no valid credential header name is set.",
        )
    return Sealed({endpoint.auth_header_name: endpoint.credential})


def _is_header_value(value: str) -> bool:
    # Latin-1 is all http.client can put in a header; beyond it, it would raise quoting the character.
    return (
        bool(value)
        and value == value.strip()
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or ord(c) > 0xFF for c in value)
    )
