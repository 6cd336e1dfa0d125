"""The leg machine: every HTTP request of the client, MCP or OAuth, is one leg made here.

This is the only module that touches ``requests`` and the only place its exceptions are
mapped, so TLS, the host gate, the caps and the error map cannot drift apart between the
MCP legs (``Transport``) and the OAuth legs (``oauth/legs.py``, which vets its URLs and
reads its JSON, but sends through ``LegMachine``).

A leg asks the operation's deadline for a grant before anything is built (outside the
exception map: a spent budget is not a failing server), sends with ``timeout=(grant,
grant)`` (never None or 0) and streams the answer under a watchdog (watchdog.py) that
dials the host gate's vetted addresses, keeps the URL's host as the TLS identity (SNI and
the certificate's name) and ends the leg when the operation's budget is spent. The status
line and headers count against their own allowance (headerlimit.py); a 3xx is refused from
them alone, its body never read; a body stops at the size cap. Trust is ``verify=``: the
certificates ``requests`` ships (certifi) unless a CA bundle is given; the environment
(REQUESTS_CA_BUNDLE, SSL_CERT_FILE, proxies, .netrc) is ignored on purpose.

For MCP, the first JSON-RPC response to our request id in a JSON body or an event stream
is the answer; server requests and notifications before it are skipped.

Exactly once: the leg machine knows whether a 2xx status line came, and marks every failure
after it ``accepted`` (errors.py). A POST so accepted and then cut off (the connection broke,
or its event stream ended and could not be resumed: no event id, a resumption refused with
404 or 405, timed out, broken, or not fitting the budget) is ``interrupted``, and a tools/call's
message says the tool may have run; resend.py lets no accepted request be sent again. Headers
(the credential) and OAuth bodies travel sealed (sealed.py), so a failing leg's frames show no
secret to an error reporter that records locals.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import re
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_match_hostname import CertificateError

from . import jsonrpc, resend, telemetry
from .deadline import MINIMUM_LEG_SECONDS, Clock, OperationDeadline
from .endpoint import Endpoint
from .errors import ChallengeError, McpTransportError
from .eventstream import EventStreamDecoder
from .headerlimit import MAX_HEADER_BYTES, MAX_HEADER_LINES, HeaderFlood
from .oauth.challenge import parse_challenge
from .pool import DEFAULT_KEEPALIVE_SECONDS, process_pool
from .redaction import Secrets
from .sealed import Sealed
from .text import NAME_LIMIT, clean
from .watchdog import POOL_CLASSES, Delivery, LegWatchdog, RefusedPeer

if TYPE_CHECKING:
    from .oauth.tokens import OperationTokens

MAX_BODY_BYTES = 2 * 1024 * 1024
# What a leg reads of a body after its answer to keep the connection (Reading.settle): the end
# of an event stream follows the answer at once, or the connection is not worth the wait.
SETTLE_SECONDS = 0.05
SETTLE_BYTES = 64 * 1024
# A server that keeps closing its stream early is not followed around forever.
MAX_RESUMPTIONS = 3
_CHUNK_BYTES = 64 * 1024
# Header token characters (RFC 9110) for a credential's header name.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A session id is visible ASCII (MCP transports, "Session Management"); an event id we
# send back as Last-Event-ID must be too, or http.client raises encoding it.
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]{1,512}")

T = TypeVar("T")

# OpenSSL's X509_V_ERR_* codes, grouped by what an operator does about them.
_UNTRUSTED_CODES = frozenset({2, 18, 19, 20, 21, 27})
_NOT_YET_VALID = 9
_EXPIRED = 10
_WRONG_NAME_CODES = frozenset({62, 64})


@dataclass(frozen=True)
class Peer:
    """Who a leg talks to, for its messages: the MCP server itself (``what`` None) or one of
    its OAuth endpoints ("token endpoint"). Never the URL: it is attacker text and may hold
    a secret in its query."""

    server: str
    what: str | None = None

    @property
    def subject(self) -> str:
        named = f"MCP server {self.server!r}"
        return named if self.what is None else f"{named}: its {self.what}"

    def error(self, kind: Any, text: str, **extra: Any) -> McpTransportError:
        """An error whose message is the subject followed by ``text`` (" did not answer")."""
        return McpTransportError(kind, self.server, f"{self.subject}{text}", **extra)

    def timeout(self, seconds: float) -> McpTransportError:
        return self.error(
            "timeout", f" did not answer within the {seconds:.1f} s left of this operation's budget."
        )


class Reading:
    """An answer whose status line and headers are in; its body is read on demand, within
    the size cap and the watchdog's grant."""

    def __init__(
        self,
        response: requests.Response,
        peer: Peer,
        watchdog: LegWatchdog,
        seconds: float,
        started_ns: int = 0,
    ) -> None:
        self.response = response
        self.peer = peer
        # The machine's clock when the request was sent (0 without a clock): for latency.
        self.started_ns = started_ns
        self._watchdog = watchdog
        self._seconds = seconds

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def headers(self) -> Any:
        return self.response.headers

    @property
    def method(self) -> str | None:
        return self.response.request.method

    @property
    def media(self) -> str:
        """The Content-Type's media type, lower case, without parameters ("" when absent)."""
        return str(self.response.headers.get("Content-Type", "")).split(";", 1)[0].strip().lower()

    @property
    def is_json(self) -> bool:
        media = self.media
        return media == "application/json" or media.endswith("+json")

    def wrong_media(self, expected: str) -> McpTransportError:
        """``content_type``: the answer is not what the leg reads (``expected`` says what is)."""
        shown = clean(self.media or "no content type", 60)
        return self.peer.error("content_type", f" answered with {shown}, {expected}.")

    def chunks(self) -> Iterator[bytes]:
        total = 0
        while True:
            chunk = self.response.raw.read1(_CHUNK_BYTES, decode_content=True)
            if not chunk:
                if self._watchdog.fired:
                    raise self.peer.timeout(self._seconds)
                return
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                raise self.peer.error(
                    "too_large",
                    f" sent more than {MAX_BODY_BYTES // (1024 * 1024)} MiB; reading stopped at the cap.",
                )
            yield chunk

    def body(self) -> bytes:
        return b"".join(self.chunks())

    def settle(self) -> bool:
        """Read what is left of the body when it is already on its way, so that the connection
        can serve the next leg: a 202's empty body, the end of an event stream after our answer.
        At most ``SETTLE_BYTES`` within ``SETTLE_SECONDS``: a server that keeps the stream open
        is not waited for, its connection is closed instead. True when the body ended."""
        raw = self.response.raw
        connection = getattr(raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if not raw.isclosed():
            if sock is None:
                return False
            ends = time.monotonic() + SETTLE_SECONDS
            left = SETTLE_BYTES
            try:
                sock.settimeout(SETTLE_SECONDS)
                while not raw.isclosed():
                    chunk = raw.read1(_CHUNK_BYTES, decode_content=True)
                    left -= len(chunk)
                    if left < 0 or self._watchdog.fired or (chunk and time.monotonic() > ends):
                        return False
                    if not chunk:
                        break
            except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError):
                return False
        if not raw.isclosed() or self._watchdog.fired:
            return False
        raw.release_conn()
        return True


class LegMachine:
    """Sends the legs of one operation over one hardened ``requests`` session, on connections
    of the process's idle pool (pool.py) kept at most ``keepalive_seconds`` between legs."""

    def __init__(
        self,
        session: requests.Session,
        *,
        allow_private_networks: bool,
        ca_bundle: str | None = None,
        clock: Clock | None = None,
        keepalive_seconds: float = DEFAULT_KEEPALIVE_SECONDS,
    ) -> None:
        # Direct, watched, a 3xx never read: the rules every leg's session follows.
        self.session = harden(session)
        self._clock = clock
        self.allow_private_networks = allow_private_networks
        self.ca_bundle = ca_bundle
        self.keepalive_seconds = keepalive_seconds
        self.sent = 0  # legs sent, for callers that report what an operation cost

    def close(self) -> None:
        self.session.close()

    def send(
        self,
        deadline: OperationDeadline,
        peer: Peer,
        method: str,
        url: str,
        read: Callable[[Reading], T],
        *,
        headers: dict[str, str],
        body: bytes | None,
        addresses: tuple[str, ...],
        quote_location: bool = False,
        repeatable: bool = False,
    ) -> T:
        """One leg: ``read`` gets the answer once its head is in (a 3xx never reaches it).

        ``quote_location``: a redirect's message quotes where it pointed (cleaned).
        ``repeatable``: the request may be sent twice without harm (resend.repeatable); on a
        pooled connection that turns out closed it then goes once more on a new connection,
        within the same budget.
        """
        attempt = functools.partial(
            self._attempt, deadline, peer, method, url, read, headers, body, addresses, quote_location
        )
        delivery = Delivery()
        try:
            return attempt(delivery)
        except McpTransportError as failed:
            fits = deadline.remaining_ns() >= MINIMUM_LEG_SECONDS * 1e9
            if not fits or not resend.on_fresh_connection(failed, delivery, repeatable):
                raise
            if delivery.origin is not None:
                # The server closed one idle connection: it may have closed the others too.
                process_pool().drop(delivery.origin)
        return attempt(Delivery(), fresh=True)

    def _attempt(
        self,
        deadline: OperationDeadline,
        peer: Peer,
        method: str,
        url: str,
        read: Callable[[Reading], T],
        headers: dict[str, str],
        body: bytes | None,
        addresses: tuple[str, ...],
        quote_location: bool,
        delivery: Delivery,
        *,
        fresh: bool = False,
    ) -> T:
        # Deliberately outside the mapping below: a spent budget is not a failing server.
        grant = deadline.grant()
        # The socket waits get whole seconds (never 0); the wall clock gets exactly what is
        # left (at least the floor), so rounding up cannot carry the operation past its budget.
        wall_seconds = deadline.remaining_ns() / 1e9
        verify = self._verify(peer)
        started_ns = self._clock.monotonic_ns() if self._clock is not None else 0
        self.sent += 1
        accepted = answered = False
        try:
            with LegWatchdog(
                wall_seconds,
                allow_private_networks=self.allow_private_networks,
                addresses=addresses,
                keepalive_seconds=self.keepalive_seconds,
                trust=verify,
                fresh=fresh,
                delivery=delivery,
            ) as watchdog:
                try:
                    response = self.session.request(
                        method,
                        url,
                        data=body,
                        headers=headers,
                        timeout=(grant, grant),
                        allow_redirects=False,
                        stream=True,
                        verify=verify,
                    )
                    # The one signal for resending (resend.py): from here the request may have run.
                    accepted = 200 <= response.status_code < 300
                    answered = True
                    try:
                        reading = Reading(response, peer, watchdog, wall_seconds, started_ns)
                        _refuse_redirect(reading, quote_location)
                        answer = read(reading)
                        # Kept for the next leg only when read to its end (LegWatchdog decides);
                        # with reuse off it is closed anyway, so nothing is waited for.
                        watchdog.reusable = self.keepalive_seconds > 0 and reading.settle()
                        return answer
                    finally:
                        response.close()
                except McpTransportError as exc:
                    if watchdog.fired:
                        # Whatever the cut-off answer looked like, the grant ran out first.
                        raise peer.timeout(wall_seconds) from exc
                    raise
                except HeaderFlood:
                    raise peer.error(
                        "too_large",
                        f" sent a status line and headers over {MAX_HEADER_BYTES // 1024} KiB or "
                        f"{MAX_HEADER_LINES} lines; reading stopped there.",
                    ) from None
                except RefusedPeer:
                    to = "" if peer.what is None else f" to its {peer.what}"
                    raise McpTransportError(
                        "refused_host",
                        peer.server,
                        f"MCP server {peer.server!r}: the connection{to} reached a non-public address; "
                        "private networks are not allowed here.",
                    ) from None
                except (
                    requests.RequestException,
                    urllib3.exceptions.HTTPError,
                    http.client.HTTPException,
                    OSError,
                ) as exc:
                    # Not chained: the library's exception quotes the URL, and a logged
                    # traceback would show a secret in its query string. Its type is named
                    # in the message instead.
                    failure = _failure(
                        exc, peer, _host_of(url), watchdog.fired, wall_seconds, connected=delivery.connected
                    )
                    if failure.kind == "unreachable" and delivery.written and not delivery.answered:
                        raise _Unanswered(
                            "unreachable",
                            peer.server,
                            f"{peer.subject}: the connection closed after the request was sent, before "
                            f"any answer ({type(exc).__name__}).",
                        ) from None
                    raise failure from None
        except McpTransportError as failed:
            failed.accepted = failed.accepted or accepted
            # Evidence for "could not run" (resend.may_have_run): the request never left whole.
            failed.written = failed.written and (delivery.written or answered)
            raise

    def _verify(self, peer: Peer) -> bool | str:
        if self.ca_bundle is None:
            return True  # what requests trusts: certifi's bundle
        if not os.path.isfile(self.ca_bundle):
            # requests would raise quoting the path, after the grant; say it in an operator's words.
            raise peer.error(
                "tls",
                " was not contacted: the CA bundle this installation trusts (NR_LLM_MCP_CA_BUNDLE) "
                "is not a readable file.",
            )
        return self.ca_bundle


def _refuse_redirect(reading: Reading, quote_location: bool) -> None:
    status = reading.status
    if not 300 <= status < 400:
        return
    # Before any byte of the body is read: closing the response unread drops its
    # connection, so whatever body follows is never read or reused. Location is only
    # quoted, never parsed.
    where = f" to {clean(reading.headers.get('Location', 'elsewhere'))}" if quote_location else ""
    raise reading.peer.error("redirect", f" redirected (HTTP {status}){where}; redirects are not followed.")


def _host_of(url: str) -> str:
    try:
        return clean(urlsplit(url).hostname or "its host", 253)
    except ValueError:
        return "its host"


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: requests and urllib3 keep the ssl error in args, reason,
    __cause__ or __context__, at most a few levels down."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        todo.extend(item for item in wrapped if isinstance(item, BaseException))


def _tls_failure(exc: BaseException, peer: Peer, host: str) -> McpTransportError | None:
    """``tls`` in an operator's words when ``exc`` is a failed handshake, else None."""
    causes = list(_causes(exc))
    for cause in causes:
        if isinstance(cause, ssl.SSLCertVerificationError):
            code = cause.verify_code
            if code in _UNTRUSTED_CODES:
                why = (
                    " presented a TLS certificate from an issuer this installation does not trust "
                    "(a site's own CA is trusted through NR_LLM_MCP_CA_BUNDLE)."
                )
            elif code == _EXPIRED:
                why = " presented an expired TLS certificate."
            elif code == _NOT_YET_VALID:
                why = " presented a TLS certificate that is not valid yet (or this machine's clock is wrong)."
            elif code in _WRONG_NAME_CODES:
                why = f" presented a TLS certificate that is not valid for {host}."
            else:
                said = clean(cause.verify_message, 80)
                why = f" presented a TLS certificate that could not be verified ({said})."
            return peer.error("tls", why)
        if isinstance(cause, CertificateError):
            return peer.error("tls", f" presented a TLS certificate that is not valid for {host}.")
    if not isinstance(exc, requests.exceptions.SSLError | urllib3.exceptions.SSLError):
        return None
    reason = next(
        (str(cause.reason) for cause in causes if isinstance(cause, ssl.SSLError) and cause.reason), ""
    )
    hint = (
        " (is it a plain http:// server?)"
        if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE")
        else ""
    )
    said = f": {clean(reason, 60)}" if reason else ""
    return peer.error("tls", f": the TLS handshake failed{said}{hint}.")


def _failure(
    exc: Exception, peer: Peer, host: str, fired: bool, seconds: float, *, connected: bool = False
) -> McpTransportError:
    """Map an I/O failure, most specific first. The exception's own text is never used:
    it can carry the URL (and a secret in its query string). Once ``connected`` (the TLS
    handshake done), an ssl error is a broken connection like any other."""
    if fired:
        return peer.timeout(seconds)
    tls = None if connected else _tls_failure(exc, peer, host)
    if tls is not None:
        return tls
    if isinstance(exc, requests.Timeout | urllib3.exceptions.TimeoutError | TimeoutError):
        return peer.timeout(seconds)
    if isinstance(exc, requests.exceptions.InvalidHeader) and isinstance(
        exc.args[0] if exc.args else None, urllib3.exceptions.InvalidHeader
    ):
        # Raised by urllib3 reading the answer (its only such check there: Content-Length
        # values that disagree), not by a header of ours.
        return peer.error("malformed", " sent conflicting Content-Length values.")
    if isinstance(
        exc,
        requests.exceptions.InvalidURL
        | requests.exceptions.MissingSchema
        | requests.exceptions.InvalidSchema
        | requests.exceptions.InvalidHeader,
    ):
        return peer.error("unreachable", " has an unusable URL.")
    if isinstance(exc, requests.ConnectionError) and not isinstance(
        exc, requests.exceptions.ChunkedEncodingError
    ):
        return peer.error("unreachable", f" could not be reached ({type(exc).__name__}).")
    return peer.error("unreachable", f": the connection broke during the answer ({type(exc).__name__}).")


class WatchedAdapter(HTTPAdapter):
    """Connections through the watched pool classes: dialled to vetted addresses, cut at the grant.

    One serves every session of the process: it holds no connection of its own (they are the
    idle pool's, pool.py, between legs), only urllib3's per-origin pool objects, so closing a
    session leaves it as it is, and building it once saves each operation its cost."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = POOL_CLASSES

    def close(self) -> None:
        pass  # shared: nothing of one session's is in it


_ADAPTER = WatchedAdapter(max_retries=0)


def _no_redirect_target(response: requests.Response) -> None:
    return None


def harden(session: requests.Session) -> requests.Session:
    """Make ``session`` send directly, through watched connections, and leave 3xx unread."""
    # Direct connections only, whatever session the factory made: through a proxy the
    # gate would judge the wrong address and the watchdog would not see the socket (and a
    # .netrc password must not reach anyone). It also keeps REQUESTS_CA_BUNDLE from
    # deciding whom this client trusts.
    session.trust_env = False
    session.proxies.clear()
    # Session.send runs the redirect machinery even with allow_redirects=False (to
    # offer the next request as response.next): it reads the whole 3xx body, inflated
    # and uncapped, and parses Location, raising whatever a hostile one provokes.
    # With no redirect target it does neither; the 3xx comes back unread.
    session.get_redirect_target = _no_redirect_target  # type: ignore[method-assign,assignment]
    session.mount("http://", _ADAPTER)
    session.mount("https://", _ADAPTER)
    return session


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
    """An event stream that ended before our answer: resumed, or ``interrupted`` (it never
    leaves this module)."""

    def __init__(self, server: str, last_event_id: str | None, retry_ms: int | None) -> None:
        super().__init__(
            "interrupted", server, f"MCP server {server!r} ended its event stream without an answer."
        )
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms


class _Unanswered(McpTransportError):
    """``unreachable`` after the request was written: the connection closed before any byte of
    an answer, so the server may have run it. A tools/call so cut off is ``interrupted``."""


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
        allow_private_networks: bool,
        addresses: list[str],
        authorizer: OperationTokens | None = None,
        ca_bundle: str | None = None,
        keepalive_seconds: float = DEFAULT_KEEPALIVE_SECONDS,
        secrets: Secrets | None = None,
    ) -> None:
        self.endpoint = endpoint
        # The operation's credentials, masked in every answer as it is decoded (redaction.py).
        self.secrets = secrets or Secrets()
        self.server = endpoint.identifier
        self._peer = Peer(endpoint.identifier)
        self._legs = LegMachine(
            session,
            allow_private_networks=allow_private_networks,
            ca_bundle=ca_bundle,
            clock=clock,
            keepalive_seconds=keepalive_seconds,
        )
        self._clock = clock
        self.auth_headers = auth_headers
        self._addresses = tuple(addresses)
        # The OAuth token source of this operation, when the server uses OAuth.
        self.authorizer = authorizer

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
            except _Unanswered as unanswered:
                if message.get("method") != "tools/call":
                    raise
                raise _unanswered(self.server, message) from unanswered
            except ChallengeError as challenge:
                if self.authorizer is None:
                    raise
                # A 401/403 status line refused the request before it ran (resend.refused), so
                # it may go again: with a new token or a typed error; bounded by the token source
                # (one refresh per operation, three authorizations), each a leg of this deadline.
                self.auth_headers = bearer_header(
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
        value = self.auth_headers.get("Authorization", "")
        return value[len("Bearer ") :] if value.startswith("Bearer ") else None

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
        # Sealed: the credential is among them, and a failing leg's frames keep this local.
        headers = Sealed({"Accept": "application/json, text/event-stream", "Accept-Encoding": "identity"})
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
            # A notification (202) or a DELETE: nothing to read here. The leg machine
            # reads the empty body (Reading.settle), so the connection serves the next leg.
            return None
        if reading.media == "text/event-stream":
            decoder = EventStreamDecoder()
            for event in decoder.events(reading.chunks()):
                message = jsonrpc.decode(event.data, self.server, "an event")
                if jsonrpc.is_answer(message, request_id):
                    return self._masked(message)  # type: ignore[no-any-return]
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
            challenge = parse_challenge(reading.headers.get("WWW-Authenticate"))
            raise ChallengeError(
                name,
                f"MCP server {name!r} refused the request (HTTP {status}): check its credential.",
                status=status,
                error=challenge.error,
                scopes=challenge.scopes,
                resource_metadata=challenge.resource_metadata,
            )
        if status == 405 and reading.method == "DELETE":
            return  # the server does not let clients end sessions: allowed by the spec
        if not 200 <= status < 300:
            raise McpTransportError(
                "status", name, f"MCP server {name!r} answered HTTP {status}.", http_status=status
            )
        if expects_body and status in (202, 204):
            raise McpTransportError(
                "malformed", name, f"MCP server {name!r} answered a request with HTTP {status} and no body."
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


def bearer_header(token: str | None) -> dict[str, str]:
    return Sealed({"Authorization": f"Bearer {token}"} if token else {})


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
