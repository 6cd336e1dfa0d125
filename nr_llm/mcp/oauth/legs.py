"""The HTTP legs of OAuth: metadata, registration and token requests.

Every URL here came from a challenge, a metadata document or an operator, so each is
vetted like the MCP URL itself before a byte is sent: http(s) only (https unless private
networks are allowed), no user-info, the host resolved within the operation's budget and
refused on a private address, the connection dialled to exactly the addresses judged.
Each leg runs under a watchdog of its own holding ITS host's vetted addresses: the MCP
leg's watchdog pins the MCP server's addresses, so an exchange with an authorization
server must never run inside it. The legs are sent by the client's one request path
(wire/legs.py: TLS identity and trust, watchdog, caps, redirect refusal, the exception
map); this module vets, and reads JSON. Every leg is granted from the operation's one
deadline.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..wire import legs as leg_machine
from ..wire import telemetry, text
from ..wire.connection import ConnectionSettings
from ..wire.deadline import OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.hostgate import refuse_private, resolve, split_target
from ..wire.sealed import Sealed, SealedBytes

if TYPE_CHECKING:
    import requests

    from ..wire.legs import Reading

SessionFactory = Callable[[], "requests.Session"]


@dataclass(frozen=True)
class Answer:
    status: int
    # The JSON object of the body; None when the body was not JSON (only for non-2xx answers).
    # Out of repr: a token or registration answer holds secrets.
    body: dict[str, Any] | None = field(repr=False)
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


class OAuthLegs:
    """The OAuth legs of one operation, over one ``requests`` session of their own."""

    def __init__(
        self,
        server: str,
        deadline: OperationDeadline,
        connection: ConnectionSettings,
        *,
        session_factory: SessionFactory | None = None,
    ) -> None:
        self.server = server
        self.deadline = deadline
        self.connection = connection
        self.allow_private_networks = connection.allow_private_networks
        self._session_factory = session_factory
        self._machine: leg_machine.LegMachine | None = None
        # One lookup per host and operation: every leg to it dials what was judged once.
        self._addresses: dict[tuple[str, int], tuple[str, ...]] = {}

    @property
    def sent(self) -> int:
        """Legs sent, for callers that report what an operation cost."""
        return self._machine.sent if self._machine is not None else 0

    def __enter__(self) -> OAuthLegs:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._machine is not None:
            self._machine.close()
            self._machine = None

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
        # Sealed: the form carries secrets, and a failing leg's frames keep these locals.
        body = SealedBytes("&".join(f"{_quote(k)}={_quote(v)}" for k, v in form.items()).encode())
        head = Sealed({"Content-Type": "application/x-www-form-urlencoded", **headers})
        return self._leg("POST", url, what, body, head, expect_json=expect_json)

    def post_json(
        self, url: str, what: str, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> Answer:
        body = SealedBytes(json.dumps(payload, separators=(",", ":")).encode())
        head = Sealed({"Content-Type": "application/json", **(headers or {})})
        return self._leg("POST", url, what, body, head)

    @telemetry.traced_oauth_leg
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
        request_headers = Sealed({"Accept": "application/json", "Accept-Encoding": "identity", **headers})

        def read(reading: Reading) -> Answer:
            return self._answer(reading, expect_json)

        return self._open().send(
            self.deadline,
            leg_machine.Peer(self.server, what),
            method,
            url,
            read,
            headers=request_headers,
            body=body,
            addresses=addresses,
            # A metadata GET may go twice; a token or registration POST only if it never left.
            repeatable=leg_machine.idempotent(method),
        )

    def _vetted(self, url: str, what: str) -> tuple[str, ...]:
        target = split_target(url, self.server)
        known = self._addresses.get(target)
        if known is not None:
            return known
        try:
            # The lookup is granted from the same budget as any leg.
            found = resolve(
                url,
                self.server,
                self.deadline.wait_seconds(),
                self.connection.resolver,
                remember_seconds=self.connection.keepalive_seconds,
            )
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

    def _open(self) -> leg_machine.LegMachine:
        if self._machine is None:
            factory = self._session_factory or leg_machine.default_session
            self._machine = leg_machine.LegMachine(factory(), self.connection)
        return self._machine

    def _answer(self, reading: Reading, expect_json: bool) -> Answer:
        status = reading.status
        headers = dict(reading.headers)
        # A success must be a JSON object where the caller reads one; an error answer never must.
        strict = expect_json and 200 <= status < 300
        if not reading.is_json:
            if strict:
                raise reading.wrong_media("not JSON")
            return Answer(status, None, headers)
        try:
            decoded = text.loads(reading.body())  # a lone surrogate replaced, as in every answer
        except (ValueError, RecursionError):
            decoded = None
        if not isinstance(decoded, dict):
            if strict:
                raise reading.peer.error("malformed", " sent no JSON object.")
            decoded = None
        return Answer(status, decoded, headers)


def _quote(value: str) -> str:
    return quote(value, safe="")
