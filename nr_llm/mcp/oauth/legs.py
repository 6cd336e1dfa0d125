"""The HTTP legs of OAuth: metadata, registration and token requests.

Every URL here came from a challenge, a metadata document or an operator, so each is
vetted like the MCP URL itself before a byte is sent: http(s) only (https unless private
networks are allowed), no user-info, the host resolved within the operation's budget and
refused on a private address, the connection dialled to exactly the addresses judged.
Each leg runs under a watchdog of its own holding ITS host's vetted addresses: the MCP
leg's watchdog pins the MCP server's addresses, so an exchange with an authorization
server must never run inside it. Redirects are refused, bodies capped at 2 MiB, and only
JSON is read. Every leg is granted from the operation's one deadline.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import requests
import urllib3.exceptions

from ..deadline import OperationDeadline
from ..errors import McpTransportError
from ..headerlimit import MAX_HEADER_BYTES, HeaderFlood
from ..hostgate import refuse_private, resolve, split_target
from ..sessions import harden
from ..text import clean
from ..watchdog import LegWatchdog, RefusedPeer

MAX_BODY_BYTES = 2 * 1024 * 1024
_CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class Answer:
    status: int
    # The JSON object of the body; None when the body was not JSON (only for non-2xx answers).
    body: dict[str, Any] | None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)


def vet_url(url: object, server: str, what: str, *, allow_private_networks: bool) -> str:
    """``url`` when it is an absolute http(s) URL we may send to, else an error naming what
    the URL was for (never the URL itself: it is attacker text)."""
    problem = _url_problem(url, allow_private_networks)
    if problem:
        raise McpTransportError(
            "refused_host" if problem == "not https" else "unreachable",
            server,
            f"MCP server {server!r}: the {what} URL is unusable ({problem}); nothing was sent to it.",
        )
    assert isinstance(url, str)
    return url


def _url_problem(url: object, allow_private_networks: bool) -> str:
    if not isinstance(url, str) or not url or len(url) > 2048:
        return "not a URL"
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url) or not url.isascii():
        return "control, space or non-ASCII characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host"
    if parts.username is not None or parts.password is not None:
        return "credentials in the URL"
    if parts.fragment:
        return "a fragment"
    if parts.scheme != "https" and not allow_private_networks:
        return "not https"
    return ""


SessionFactory = Callable[[], requests.Session]


class OAuthLegs:
    """The OAuth legs of one operation, over one ``requests`` session of their own."""

    def __init__(
        self,
        server: str,
        deadline: OperationDeadline,
        *,
        allow_private_networks: bool,
        session_factory: SessionFactory = requests.Session,
    ) -> None:
        self.server = server
        self.deadline = deadline
        self.allow_private_networks = allow_private_networks
        self.sent = 0  # legs sent, for callers that report what an operation cost
        self._session_factory = session_factory
        self._session: requests.Session | None = None
        # One lookup per host and operation: every leg to it dials what was judged once.
        self._addresses: dict[tuple[str, int], tuple[str, ...]] = {}

    def __enter__(self) -> OAuthLegs:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def get(self, url: str, what: str) -> Answer:
        return self._leg("GET", url, what, None, {})

    def post_form(
        self,
        url: str,
        what: str,
        form: Mapping[str, str],
        headers: Mapping[str, str],
        *,
        expect_json: bool = True,
    ) -> Answer:
        """``expect_json=False`` for an endpoint whose success is its status alone (RFC 7009
        revocation): a 2xx body that is not a JSON object is then no error (``body`` None)."""
        body = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in form.items()).encode()
        head = {"Content-Type": "application/x-www-form-urlencoded", **headers}
        return self._leg("POST", url, what, body, head, expect_json=expect_json)

    def post_json(
        self, url: str, what: str, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> Answer:
        body = json.dumps(payload, separators=(",", ":")).encode()
        return self._leg("POST", url, what, body, {"Content-Type": "application/json", **(headers or {})})

    def _leg(
        self,
        method: str,
        url: str,
        what: str,
        body: bytes | None,
        headers: Mapping[str, str],
        *,
        expect_json: bool = True,
    ) -> Answer:
        url = vet_url(url, self.server, what, allow_private_networks=self.allow_private_networks)
        addresses = self._vetted(url, what)
        # Outside the mapping below: a spent budget is not a failing authorization server.
        grant = self.deadline.grant()
        wall_seconds = self.deadline.remaining_ns() / 1e9
        session = self._open()
        self.sent += 1
        request_headers = {"Accept": "application/json", "Accept-Encoding": "identity", **headers}
        with LegWatchdog(
            wall_seconds, allow_private_networks=self.allow_private_networks, addresses=addresses
        ) as watchdog:
            try:
                response = session.request(
                    method,
                    url,
                    data=body,
                    headers=request_headers,
                    timeout=(grant, grant),
                    allow_redirects=False,
                    stream=True,
                )
                try:
                    return self._answer(response, what, watchdog, wall_seconds, expect_json)
                finally:
                    response.close()
            except McpTransportError as exc:
                if watchdog.fired:
                    raise self._timeout(what, wall_seconds) from exc
                raise
            except HeaderFlood:
                raise McpTransportError(
                    "too_large",
                    self.server,
                    f"MCP server {self.server!r}: its {what} sent headers over "
                    f"{MAX_HEADER_BYTES // 1024} KiB; reading stopped there.",
                ) from None
            except RefusedPeer:
                raise McpTransportError(
                    "refused_host",
                    self.server,
                    f"MCP server {self.server!r}: the connection to its {what} reached a non-public "
                    "address; private networks are not allowed here.",
                ) from None
            except (
                requests.RequestException,
                urllib3.exceptions.HTTPError,
                http.client.HTTPException,
                OSError,
            ) as exc:
                # Not chained: the library's text quotes the URL and a traceback would carry it.
                if watchdog.fired or isinstance(
                    exc, requests.Timeout | urllib3.exceptions.TimeoutError | TimeoutError
                ):
                    raise self._timeout(what, wall_seconds) from None
                raise McpTransportError(
                    "unreachable",
                    self.server,
                    f"MCP server {self.server!r}: its {what} could not be reached ({type(exc).__name__}).",
                ) from None

    def _vetted(self, url: str, what: str) -> tuple[str, ...]:
        target = split_target(url, self.server)
        known = self._addresses.get(target)
        if known is not None:
            return known
        try:
            # The lookup is granted from the same budget as any leg.
            found = resolve(url, self.server, self.deadline.grant())
            if not self.allow_private_networks:
                refuse_private(found, self.server)
        except McpTransportError as exc:
            if exc.kind == "deadline_exhausted":
                raise
            reason = {
                "refused_host": "resolves to a loopback, private or otherwise non-public address, "
                "and private networks are not allowed here",
                "timeout": "did not resolve in time",
            }.get(exc.kind, "could not be resolved")
            raise McpTransportError(
                exc.kind, self.server, f"MCP server {self.server!r}: the host of its {what} {reason}."
            ) from None
        self._addresses[target] = tuple(found)
        return self._addresses[target]

    def _open(self) -> requests.Session:
        if self._session is None:
            self._session = harden(self._session_factory())
        return self._session

    def _answer(
        self,
        response: requests.Response,
        what: str,
        watchdog: LegWatchdog,
        seconds: float,
        expect_json: bool,
    ) -> Answer:
        status = response.status_code
        if 300 <= status < 400:
            raise McpTransportError(
                "redirect",
                self.server,
                f"MCP server {self.server!r}: its {what} redirected (HTTP {status}); "
                "redirects are not followed.",
            )
        media = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        is_json = media == "application/json" or media.endswith("+json")
        # A success must be a JSON object where the caller reads one; an error answer never must.
        strict = expect_json and 200 <= status < 300
        if not is_json:
            if strict:
                raise McpTransportError(
                    "content_type",
                    self.server,
                    f"MCP server {self.server!r}: its {what} answered with "
                    f"{clean(media or 'no content type', 60)}, not JSON.",
                )
            return Answer(status, None, dict(response.headers))
        raw = self._read(response, what, watchdog, seconds)
        try:
            decoded = json.loads(raw)
        except (ValueError, RecursionError):
            decoded = None
        if not isinstance(decoded, dict):
            if strict:
                raise McpTransportError(
                    "malformed", self.server, f"MCP server {self.server!r}: its {what} sent no JSON object."
                )
            decoded = None
        return Answer(status, decoded, dict(response.headers))

    def _read(self, response: requests.Response, what: str, watchdog: LegWatchdog, seconds: float) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = response.raw.read1(_CHUNK_BYTES, decode_content=True)
            if not chunk:
                if watchdog.fired:
                    raise self._timeout(what, seconds)
                return b"".join(chunks)
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                raise McpTransportError(
                    "too_large",
                    self.server,
                    f"MCP server {self.server!r}: its {what} sent more than "
                    f"{MAX_BODY_BYTES // (1024 * 1024)} MiB; reading stopped at the cap.",
                )
            chunks.append(chunk)

    def _timeout(self, what: str, seconds: float) -> McpTransportError:
        return McpTransportError(
            "timeout",
            self.server,
            f"MCP server {self.server!r}: its {what} did not answer within the {seconds:.1f} s left "
            "of this operation's budget.",
        )


def _quote(value: str) -> str:
    return quote(value, safe="")
