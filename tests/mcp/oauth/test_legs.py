"""OAuth legs: every URL vetted like the MCP URL, one deadline, its own watchdog and addresses."""

from __future__ import annotations

import contextlib
import http.server
import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from nr_llm.mcp import ConnectionSettings
from nr_llm.mcp.oauth import OAuthLegs
from nr_llm.mcp.oauth.legs import vet_url
from nr_llm.mcp.wire import watchdog as watchdog_module
from nr_llm.mcp.wire.deadline import OperationDeadline
from nr_llm.mcp.wire.errors import McpTransportError
from nr_llm.mcp.wire.legs import MAX_BODY_BYTES
from nr_llm.mcp.wire.watchdog import LegWatchdog

from .world import AS_METADATA, World, legs_for


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://as.example/x", "not an http(s) URL"),
        ("file:///etc/passwd", "not an http(s) URL"),
        ("https://user:pw@as.example/token", "credentials in the URL"),
        ("https://as.example/x#frag", "a fragment"),
        ("https://as.example:99999/x", "not a URL"),
        ("https://as.example/\nx", "control"),
        ("/relative/path", "not an http(s) URL"),
        (42, "not a URL"),
    ],
)
def test_unusable_urls_are_refused_before_anything_is_sent(url: object, problem: str) -> None:
    """A URL from a challenge or metadata that is not a plain absolute http(s) URL is refused."""
    with pytest.raises(McpTransportError) as caught:
        vet_url(url, "demo", "token endpoint", allow_private_networks=True)
    assert problem in str(caught.value) and "token endpoint" in str(caught.value)


def test_plain_http_is_refused_unless_private_networks_are_allowed(world: World, deadline) -> None:
    """http:// needs allow_private_networks; without it nothing is resolved or sent."""
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline, allow_private_networks=False).get("http://93.184.216.34/x", "metadata")
    assert caught.value.kind == "refused_host" and "not https" in str(caught.value)
    assert world.sent == []


def test_a_url_resolving_to_a_private_address_is_refused_unsent(world: World, deadline, monkeypatch) -> None:
    """A metadata URL whose host resolves inside is refused like the MCP URL; nothing is sent."""
    monkeypatch.setattr(
        socket, "getaddrinfo", lambda host, port, *a, **k: [(socket.AF_INET, 1, 6, "", ("10.0.0.7", port))]
    )
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline, allow_private_networks=False).get("https://internal.example/x", "metadata")
    assert caught.value.kind == "refused_host" and "'demo'" in str(caught.value)
    assert world.sent == []


def test_a_redirect_is_refused_not_followed(world: World, deadline) -> None:
    """A 302 from an authorization server is an error; its Location is never requested."""
    world.serve("GET", AS_METADATA, 302, {}, Location="https://192.0.2.9/elsewhere")
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline).get(AS_METADATA, "authorization server metadata")
    assert caught.value.kind == "redirect"
    assert world.urls() == [AS_METADATA]


def test_a_body_over_the_cap_stops_reading(world: World, deadline) -> None:
    """More than 2 MiB of metadata is too_large, not parsed."""
    world.serve("GET", AS_METADATA, 200, '{"x":"' + "a" * MAX_BODY_BYTES + '"}')
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline).get(AS_METADATA, "authorization server metadata")
    assert caught.value.kind == "too_large"


def test_a_successful_answer_must_be_a_json_object(world: World, deadline) -> None:
    """HTML at a metadata URL is content_type; a JSON array is malformed."""
    world.mock.add("GET", AS_METADATA, body="<html>", content_type="text/html")
    world.mock.add("GET", AS_METADATA + "/list", body="[1]", content_type="application/json")
    legs = legs_for(deadline)
    with pytest.raises(McpTransportError) as html:
        legs.get(AS_METADATA, "authorization server metadata")
    with pytest.raises(McpTransportError) as array:
        legs.get(AS_METADATA + "/list", "authorization server metadata")
    assert (html.value.kind, array.value.kind) == ("content_type", "malformed")


def test_an_error_answer_that_is_not_json_is_returned_as_a_status(world: World, deadline) -> None:
    """A 404 page is a status for discovery to move on from, not an exception."""
    world.mock.add("GET", AS_METADATA, status=404, body="not here", content_type="text/plain")
    answer = legs_for(deadline).get(AS_METADATA, "authorization server metadata")
    assert (answer.status, answer.body) == (404, None)


def test_a_status_only_form_post_accepts_any_success_body_but_still_refuses_a_redirect(
    world: World, deadline
) -> None:
    """expect_json=False (revocation, RFC 7009): an empty text/html 200 and a JSON array are
    answers with body None, a JSON object is still read; a 302 is still an error. The same 200
    without it is content_type, as for every other leg."""
    revoke = "http://192.0.2.1/revoke"
    world.mock.add("POST", revoke, body="", content_type="text/html")
    world.mock.add("POST", revoke, body="[1]", content_type="application/json")
    world.mock.add(
        "POST",
        revoke,
        status=400,
        body='{"error": "unsupported_token_type"}',
        content_type="application/json",
    )
    world.mock.add("POST", revoke, status=302, headers={"Location": "https://192.0.2.9/x"})
    world.mock.add("POST", revoke, body="", content_type="text/html")
    legs = legs_for(deadline)

    def post(expect_json: bool = False):
        return legs.post_form(revoke, "revocation endpoint", {"token": "t"}, {}, expect_json=expect_json)

    answers = [post(), post(), post()]
    assert [(answer.status, answer.body) for answer in answers] == [
        (200, None),
        (200, None),
        (400, {"error": "unsupported_token_type"}),
    ]
    with pytest.raises(McpTransportError) as redirect:
        post()
    with pytest.raises(McpTransportError) as strict:
        post(expect_json=True)
    assert (redirect.value.kind, strict.value.kind) == ("redirect", "content_type")


def test_every_leg_is_granted_from_the_operation_deadline(world: World, deadline) -> None:
    """Legs spend one budget: with 20 s and 6 s per leg the grants are 20, 14, 8, 2; the fifth is not sent."""
    world.seconds_per_leg = 6
    world.serve("GET", AS_METADATA, body={})
    legs = legs_for(deadline)
    for _ in range(4):
        legs.get(AS_METADATA, "authorization server metadata")
    with pytest.raises(McpTransportError) as caught:
        legs.get(AS_METADATA, "authorization server metadata")
    assert [s.timeout for s in world.sent] == [(20, 20), (14, 14), (8, 8), (2, 2)]
    assert caught.value.kind == "deadline_exhausted" and len(world.sent) == 4


def test_a_host_lookup_spends_the_same_budget(world: World, monkeypatch) -> None:
    """The authorization server's lookup is granted from the deadline: a slow one leaves less for the leg."""
    from ..scripted import FakeClock

    clock = FakeClock()
    deadline = OperationDeadline(20, clock, "demo")
    grants: list[int] = []

    def slow(host, port, *args, **kwargs):
        clock.advance(7)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]

    monkeypatch.setattr(socket, "getaddrinfo", slow)
    world.clock = clock
    world.serve("GET", "https://as.example/meta", body={})
    OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=False)).get(
        "https://as.example/meta", "metadata"
    )
    grants = [s.timeout[0] for s in world.sent]
    assert grants == [13]


def test_a_spent_budget_sends_nothing(world: World) -> None:
    """With less than a second left, the OAuth leg is deadline_exhausted before any lookup or request."""
    from ..scripted import FakeClock

    clock = FakeClock()
    deadline = OperationDeadline(2, clock, "demo")
    deadline.grant()
    clock.advance(1.5)
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline).get(AS_METADATA, "metadata")
    assert caught.value.kind == "deadline_exhausted" and world.sent == []


class _Json(http.server.BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the stdlib's name
        pass

    def do_GET(self) -> None:
        payload = json.dumps({"issuer": "ok"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        payload = json.dumps(
            {"access_token": "AT-leak-probe", "token_type": "Bearer", "refresh_token": "RT-leak-probe-2"}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def _json_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Json)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_an_oauth_leg_dials_its_own_hosts_vetted_addresses_under_its_own_watchdog(monkeypatch) -> None:
    """Started inside an MCP leg (whose watchdog pins the MCP server's addresses), an OAuth leg
    resolves its own host once, dials exactly that address, and is watched by its own watchdog."""
    real = socket.getaddrinfo
    lookups: list[str] = []

    def names(host, port, *args, **kwargs):
        if host == "as.test":
            lookups.append(host)
            return real("127.0.0.1", port, *args, **kwargs)
        ipaddress.ip_address(host)  # a literal (the dialled address) passes; any other name fails
        return real(host, port, *args, **kwargs)

    watched_by: list[LegWatchdog] = []
    original_watch = LegWatchdog.watch

    def spy(self, sock):
        watched_by.append(self)
        return original_watch(self, sock)

    monkeypatch.setattr(socket, "getaddrinfo", names)
    monkeypatch.setattr(watchdog_module.LegWatchdog, "watch", spy)
    from ..scripted import FakeClock

    with _json_server() as port:
        deadline = OperationDeadline(10, FakeClock(), "demo")
        # The MCP leg's watchdog pins an address the authorization server is not on.
        with (
            LegWatchdog(10, allow_private_networks=True, addresses=("127.0.0.9",)) as mcp_leg,
            OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=True)) as legs,
        ):
            first = legs.get(f"http://as.test:{port}/meta", "metadata")
            second = legs.get(f"http://as.test:{port}/meta", "metadata")
    assert first.body == second.body == {"issuer": "ok"}
    assert lookups == ["as.test"]  # one lookup per host and operation; no fresh answer at connect
    assert watched_by and mcp_leg not in watched_by
    assert all(w.addresses == ("127.0.0.1",) for w in watched_by)


def test_failures_name_the_purpose_never_the_url(world: World, deadline) -> None:
    """An unreachable token endpoint's error names the server and the endpoint's role, not its URL."""
    with pytest.raises(McpTransportError) as caught:
        legs_for(deadline).post_form(
            "https://192.0.2.2/token?secret=hunter2", "token endpoint", {"refresh_token": "r-secret"}, {}
        )
    text = str(caught.value) + repr(caught.value)
    assert caught.value.kind == "unreachable" and "token endpoint" in text
    assert "hunter2" not in text and "r-secret" not in text and caught.value.__cause__ is None


def test_a_connection_that_lands_on_a_private_address_is_refused(monkeypatch) -> None:
    """DNS rebinding: should the gate be fooled, the connected peer is checked too and nothing is read."""
    from nr_llm.mcp.oauth import legs as legs_module

    from ..scripted import FakeClock

    monkeypatch.setattr(legs_module, "refuse_private", lambda addresses, server: None)  # the gate was fooled
    monkeypatch.setattr(legs_module, "_url_problem", lambda url, allow: "")  # and http:// let through
    with _json_server() as port, pytest.raises(McpTransportError) as caught:
        OAuthLegs(
            "demo",
            OperationDeadline(10, FakeClock(), "demo"),
            ConnectionSettings(allow_private_networks=False),
        ).get(f"http://127.0.0.1:{port}/meta", "token endpoint")
    assert caught.value.kind == "refused_host" and "non-public" in str(caught.value)


def test_no_token_or_secret_reaches_a_log_record(caplog) -> None:
    """A real refresh over HTTP with every logger at DEBUG (urllib3 included): no token, refresh
    token or client secret, sent or received, appears in any log record."""
    import logging

    from nr_llm.mcp.oauth import ClientConfig, Grant, refresh
    from nr_llm.mcp.oauth.store import ClientRegistration

    from ..scripted import FakeClock
    from .world import FakeWall

    secrets = ["RT-old-probe", "CS-probe", "AT-leak-probe", "RT-leak-probe-2", "AT-old-probe"]
    caplog.set_level(logging.DEBUG)
    with _json_server() as port:
        token_endpoint = f"http://127.0.0.1:{port}/token"
        grant = Grant(
            access_token="AT-old-probe",
            issuer=f"http://127.0.0.1:{port}",
            token_endpoint=token_endpoint,
            resource="http://127.0.0.1/mcp",
            client=ClientRegistration(f"http://127.0.0.1:{port}", "cid", "CS-probe", "client_secret_post"),
            refresh_token="RT-old-probe",
        )
        with OAuthLegs(
            "demo",
            OperationDeadline(10, FakeClock(), "demo"),
            ConnectionSettings(allow_private_networks=True),
        ) as legs:
            renewed = refresh(legs, grant, ClientConfig(), FakeWall())
    assert renewed.refresh_token == "RT-leak-probe-2"
    assert caplog.records  # urllib3 did log the exchange
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not [secret for secret in secrets if secret in logged]
    assert not [secret for secret in secrets if secret in repr(renewed) + repr(grant)]


@contextmanager
def _raw_server(reply: bytes) -> Iterator[int]:
    """A socket server that sends ``reply`` to every connection, whatever was asked."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            with conn:
                conn.recv(65536)
                with contextlib.suppress(OSError):  # the client stopped reading: that is the point
                    conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        listener.close()
        thread.join(10)


def test_a_header_flood_is_too_large(monkeypatch) -> None:
    """Headers past the allowance from an authorization server stop reading: too_large, no crash."""
    from ..scripted import FakeClock

    flood = (
        b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"a" * 900) for i in range(90)) + b"\r\n"
    )
    with _raw_server(flood) as port, pytest.raises(McpTransportError) as caught:
        legs = OAuthLegs(
            "demo",
            OperationDeadline(10, FakeClock(), "demo"),
            ConnectionSettings(allow_private_networks=True),
        )
        legs.get(f"http://127.0.0.1:{port}/meta", "authorization server metadata")
    assert caught.value.kind == "too_large" and "headers" in str(caught.value)


def test_a_redirect_s_body_is_never_read(monkeypatch) -> None:
    """A 302 announcing a huge body is refused from its status alone, quickly, without reading it."""
    import time

    from ..scripted import FakeClock

    head = b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 50000000\r\n\r\n"
    deadline = OperationDeadline(10, FakeClock(), "demo")
    with _raw_server(head + b"x" * 1_000_000) as port:
        started = time.monotonic()
        with (
            pytest.raises(McpTransportError) as caught,
            OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=True)) as legs,
        ):
            legs.get(f"http://127.0.0.1:{port}/meta", "authorization server metadata")
        elapsed = time.monotonic() - started
    assert caught.value.kind == "redirect" and elapsed < 5
