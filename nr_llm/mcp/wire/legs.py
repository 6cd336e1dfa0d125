"""Every HTTP request of the client, MCP or OAuth, is one leg made here.

This is the only module that touches ``requests`` and the only place its exceptions are
mapped, so TLS, the host gate, the caps and the error map cannot drift apart between the
MCP legs (protocol/transport.py) and the OAuth legs (``oauth/legs.py``, which vets its URLs
and reads its JSON, but sends through ``LegMachine``). It knows HTTP and nothing of JSON-RPC:
what a body means is the caller's ``read``.

A leg asks the operation's deadline for a grant before anything is built (outside the
exception map: a spent budget is not a failing server), sends with ``timeout=(grant,
grant)`` (never None or 0) and streams the answer under a watchdog (watchdog.py) that
dials the host gate's vetted addresses, keeps the URL's host as the TLS identity (SNI and
the certificate's name) and ends the leg when the operation's budget is spent. The status
line and headers count against their own allowance (headerlimit.py); a 3xx is refused from
them alone, its body never read; a body stops at the size cap. Trust is ``verify=``: the
certificates ``requests`` ships (certifi) unless a CA bundle is given; the environment
(REQUESTS_CA_BUNDLE, SSL_CERT_FILE, proxies, .netrc) is ignored on purpose.

Exactly once: this module knows whether a 2xx status line came, and marks every failure
after it ``accepted`` (errors.py); a leg written and then met by a closed connection before
any answer is ``Unanswered``. A leg is sent once more on a new connection only as
``on_fresh_connection`` allows; the rest of the resend rule is the protocol's
(protocol/resend.py). Headers (the credential) and OAuth bodies travel sealed (sealed.py), so a
failing leg's frames show no secret to an error reporter that records locals.
"""

from __future__ import annotations

import errno
import functools
import http.client
import os
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_match_hostname import CertificateError

from .connection import ConnectionSettings
from .connections import POOL_CLASSES, RefusedPeer
from .deadline import MINIMUM_LEG_SECONDS, Clock, OperationDeadline
from .errors import McpTransportError
from .headerlimit import MAX_HEADER_BYTES, MAX_HEADER_LINES, HeaderFlood
from .pool import process_pool
from .text import clean
from .watchdog import Delivery, LegWatchdog

MAX_BODY_BYTES = 2 * 1024 * 1024
# What a leg reads of a body after its answer to keep the connection (Reading.settle): the end
# of an event stream follows the answer at once, or the connection is not worth the wait.
SETTLE_SECONDS = 0.05
SETTLE_BYTES = 64 * 1024
_CHUNK_BYTES = 64 * 1024

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
    of the process's idle pool (pool.py) kept at most ``keepalive_seconds`` between legs (all
    of how it connects is one value, connection.py)."""

    def __init__(
        self,
        session: requests.Session,
        connection: ConnectionSettings,
        *,
        clock: Clock | None = None,
    ) -> None:
        # Direct, watched, a 3xx never read: the rules every leg's session follows.
        self.session = harden(session)
        self._clock = clock
        self.allow_private_networks = connection.allow_private_networks
        self.ca_bundle = connection.ca_bundle
        self.keepalive_seconds = connection.keepalive_seconds
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
        ``repeatable``: the request may be sent twice without harm (protocol/resend.py); on a
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
            if not fits or not on_fresh_connection(failed, delivery, repeatable):
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
                    # The one signal for resending (protocol/resend.py): from here the request may have run.
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
                        exc,
                        peer,
                        _host_of(url),
                        watchdog.fired,
                        wall_seconds,
                        connected=delivery.connected,
                        where=_address_of(url),
                    )
                    if failure.kind == "unreachable" and delivery.written and not delivery.answered:
                        raise Unanswered(
                            "unreachable",
                            peer.server,
                            f"{peer.subject}: the connection closed after the request was sent, before "
                            f"any answer ({type(exc).__name__}).",
                        ) from None
                    raise failure from None
        except McpTransportError as failed:
            failed.accepted = failed.accepted or accepted
            # Evidence for "could not run" (protocol/resend.py may_have_run): the request never left whole.
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


def _address_of(url: str) -> str:
    """``host:port`` of ``url`` (the scheme's port when it names none), for a message."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "its host"
    return f"{_host_of(url)}:{port}"


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


#: What the socket said, in words an operator acts on ("connection refused" means nothing listens
#: on that port; the exception's class name meant nothing). The exception's own text is never used.
_SOCKET_REASONS = {
    errno.ECONNREFUSED: "connection refused (nothing listens on that port)",
    errno.ECONNRESET: "connection reset by the server",
    errno.EHOSTUNREACH: "no route to the host",
    errno.ENETUNREACH: "the network is unreachable",
}


def _failure(
    exc: Exception,
    peer: Peer,
    host: str,
    fired: bool,
    seconds: float,
    *,
    connected: bool = False,
    where: str = "",
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
        said = next(
            (
                _SOCKET_REASONS[c.errno]
                for c in _causes(exc)
                if isinstance(c, OSError) and c.errno in _SOCKET_REASONS
            ),
            f"({type(exc).__name__})",
        )
        return peer.error("unreachable", f" could not be reached at {where or host}: {said}.")
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


def default_session() -> requests.Session:
    # Transport turns off the environment (proxies, .netrc) on every session it is given:
    # a netrc password must not reach an MCP server.
    return requests.Session()


class Unanswered(McpTransportError):
    """``unreachable`` after the request was written: the connection closed before any byte of
    an answer, so the server may have run it. A tools/call so cut off is ``interrupted``
    (protocol/transport.py)."""


def idempotent(http_method: str) -> bool:
    """An HTTP method that may be sent twice without harm, whatever it carries."""
    return http_method in ("GET", "DELETE")


def on_fresh_connection(exc: McpTransportError, delivery: Delivery, may_repeat: bool) -> bool:
    """A leg that failed on a pooled connection may go once more on a new one: the connection
    broke before any byte of an answer, and the request may be repeated or never left."""
    if exc.accepted or exc.kind != "unreachable" or not delivery.reused or delivery.answered:
        return False
    return may_repeat or not delivery.written
