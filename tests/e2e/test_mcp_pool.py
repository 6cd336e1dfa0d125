"""Warm connections (issue 20): idle connections reused across operations, and never wrongly.

Over TLS by name (https://mcp.test, https://auth.test: certificates of this session's test CA),
against the official SDK server (its ``/sni`` log counts TLS handshakes: one per new
connection) and tests/peers/adversarial.py (its ``/seen`` log says how many requests each
connection carried, and counts every tools/call it ran).
"""

from __future__ import annotations

import os
import socket
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.oauth.legs import OAuthLegs
from nr_llm.mcp.wire.connections import WatchedHTTPSConnection
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.legs import LegMachine
from nr_llm.mcp.wire.pool import process_pool
from nr_llm.mcp.wire.watchdog import _WATCHMAN
from tests.tls import (
    TestAuthority,
    log_entries,
    names_session,
    peer_log,
    resolve_test_names,
    sdk_server_tls,
    tls_adversary,
    tls_client,
)

pytestmark = pytest.mark.e2e

BUDGET = 4


def _client(tls: TestAuthority, keepalive_seconds: float = 1.5) -> McpClient:
    return tls_client(tls, keepalive_seconds=keepalive_seconds)


def _handshakes(url: str, tls: TestAuthority) -> int:
    """TLS handshakes the SDK peer has seen (each look at its log is one more)."""
    return len(peer_log(url, tls, "/sni"))


def _dialled_since(url: str, tls: TestAuthority, before: int) -> int:
    """New connections since ``before`` was counted, this look's own left out."""
    return _handshakes(url, tls) - before - 1


@pytest.fixture(scope="module")
def sdk(tls: TestAuthority) -> Iterator[str]:
    with sdk_server_tls(tls, "mcp.test") as url:
        yield url


@pytest.fixture(scope="module")
def sdk_handshake(tls: TestAuthority) -> Iterator[str]:
    with sdk_server_tls(tls, "mcp.test", "--no-discover") as url:
        yield url


@pytest.fixture(scope="module")
def origin(tls: TestAuthority) -> Iterator[str]:
    with tls_adversary(tls.issue("mcp.test")) as (port, _log):
        yield f"https://mcp.test:{port}"


def _seen(origin: str, tls: TestAuthority, path: str) -> list[dict[str, Any]]:
    """Every request of ``path`` the adversarial peer noted (with what its connection carried)."""
    with names_session(tls) as session:
        rows = session.get(f"{origin}/seen", timeout=10).json()
    return [row for row in rows if row.get("path") == path]


def test_warm_calls_of_the_2026_era_share_one_connection(tls: TestAuthority, sdk: str) -> None:
    """Five operations against a 2026-07-28 server: the first dials (one TLS handshake), the
    others reuse its connection, which stays in the pool between them."""
    client = _client(tls)
    endpoint = Endpoint(identifier="warm", url=sdk)
    before = _handshakes(sdk, tls)
    for _ in range(5):
        assert client.call_tool(endpoint, "echo", {"text": "hi"}).text == "hi"
    assert _dialled_since(sdk, tls, before) == 1
    assert process_pool().count() == 1


def test_the_handshake_era_spends_one_connection_on_its_four_requests(
    tls: TestAuthority, sdk_handshake: str
) -> None:
    """initialize, the initialized notification (202, its empty body read), the call and DELETE
    go over one connection, and the next operation reuses it too."""
    client = _client(tls)
    endpoint = Endpoint(identifier="warm", url=sdk_handshake)
    before = _handshakes(sdk_handshake, tls)
    for _ in range(3):
        assert client.call_tool(endpoint, "echo", {"text": "hi"}).text == "hi"
    assert _dialled_since(sdk_handshake, tls, before) == 1


def test_keepalive_zero_gives_every_leg_a_new_connection(tls: TestAuthority, sdk: str) -> None:
    """NR_LLM_MCP_KEEPALIVE_SECONDS=0 (keepalive_seconds=0): nothing is kept, every call dials."""
    client = _client(tls, keepalive_seconds=0)
    endpoint = Endpoint(identifier="cold", url=sdk)
    client.call_tool(endpoint, "echo", {"text": "hi"})
    before = _handshakes(sdk, tls)
    for _ in range(3):
        client.call_tool(endpoint, "echo", {"text": "hi"})
    assert _dialled_since(sdk, tls, before) == 3
    assert process_pool().count() == 0


def test_a_connection_never_serves_another_origin(tls: TestAuthority) -> None:
    """mcp.test and auth.test resolve to the same address and port (one server, a certificate
    for both): still two origins, the TLS identity differs, so each gets a connection of its own,
    asked for by its own name (SNI), and each is reused only by its own."""
    client = _client(tls)
    with tls_adversary(tls.issue("mcp.test", "auth.test")) as (port, log):
        for host in ("mcp.test", "auth.test", "mcp.test", "auth.test"):
            endpoint = Endpoint(identifier=host.split(".")[0], url=f"https://{host}:{port}/fine/0/mcp")
            assert client.call_tool(endpoint, "echo", {"text": host}).text == "done"
        names = [entry["sni"] for entry in log_entries(log) if "sni" in entry]
        assert sorted(names) == ["auth.test", "mcp.test"], names
        assert process_pool().count() == 2
        process_pool().clear()


def test_two_servers_of_one_origin_share_a_connection_but_never_a_session_or_credential(
    tls: TestAuthority, origin: str
) -> None:
    """Two endpoints on one origin (two paths, two credentials) interleaved: their requests
    ride one connection (it carried them all), and each carries only its own credential and
    the session ids its own server issued."""
    client = _client(tls)
    a = Endpoint(
        identifier="a", url=f"{origin}/record/0/a/mcp", credential="secret-of-a", auth_placement="bearer"
    )
    b = Endpoint(
        identifier="b",
        url=f"{origin}/record/0/b/mcp",
        credential="secret-of-b",
        auth_placement="header",
        auth_header_name="X-Api-Key",
    )
    for endpoint in (a, b, a, b):
        assert client.call_tool(endpoint, "echo", {"text": "x"}).text == "done"
    seen_a, seen_b = _seen(origin, tls, "/record/0/a/mcp"), _seen(origin, tls, "/record/0/b/mcp")
    carried = [int(row["carried"]) for row in seen_a + seen_b]
    assert max(carried) == len(carried), carried  # one connection carried every request
    for rows, mine, theirs in (
        (seen_a, "secret-of-a", "secret-of-b"),
        (seen_b, "secret-of-b", "secret-of-a"),
    ):
        assert all(theirs not in str(row.get(h)) for row in rows for h in ("Authorization", "X-Api-Key"))
        assert all(mine in str(row.get("Authorization") or row.get("X-Api-Key")) for row in rows)
    sessions_a = {row["Mcp-Session-Id"] for row in seen_a if row["Mcp-Session-Id"]}
    sessions_b = {row["Mcp-Session-Id"] for row in seen_b if row["Mcp-Session-Id"]}
    assert sessions_a and sessions_b and not sessions_a & sessions_b


def test_a_connection_the_server_closed_while_idle_is_not_used(
    tls: TestAuthority, origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server closes idle connections after 0.2 s; the client would keep them 1.5 s. The
    closed one is found closed before reuse (its socket reads EOF), so the call, a tools/call,
    goes out once, on a new connection, and runs once: no leg failed and was sent again."""
    path = "/idle-close/0.2/closed/mcp"
    client = _client(tls)
    endpoint = Endpoint(identifier="idle", url=f"{origin}{path}", budget_seconds=BUDGET)
    client.ping(endpoint)
    time.sleep(0.5)
    assert process_pool().count() == 1
    attempts: list[bool] = []
    attempt = LegMachine._attempt

    def counted(self: LegMachine, *args: Any, **kwargs: Any) -> Any:
        attempts.append(bool(kwargs.get("fresh")))
        return attempt(self, *args, **kwargs)

    monkeypatch.setattr(LegMachine, "_attempt", counted)
    assert client.call_tool(endpoint, "echo", {"text": "x"}).text == "done"
    assert attempts == [False]
    rows = _seen(origin, tls, path)
    assert [row["method"] for row in rows].count("ran") == 1
    assert [row["carried"] for row in rows if row["method"] == "POST tools/call"] == ["1"]


def test_a_server_closing_idle_connections_right_at_the_limit_never_runs_a_tool_twice(
    tls: TestAuthority, origin: str
) -> None:
    """The server's keep-alive timeout is the client's idle limit (0.3 s), and calls come just
    before, at and just after it: a connection is reused, dropped by the client, or found
    closed; whichever, every call the server read ran once and was answered, and none was sent
    twice (one the server's close met in flight is interrupted, and never reached it)."""
    path = "/idle-close/0.3/limit/mcp"
    client = _client(tls, keepalive_seconds=0.3)
    endpoint = Endpoint(identifier="limit", url=f"{origin}{path}", budget_seconds=BUDGET)
    outcomes: list[str] = []
    for gap in (0.27, 0.29, 0.3, 0.31, 0.33) * 2:
        try:
            outcomes.append(client.call_tool(endpoint, "echo", {"text": "x"}).text)
        except McpTransportError as exc:
            assert exc.kind == "interrupted", exc
            outcomes.append(exc.kind)
        time.sleep(gap)
    methods = [row["method"] for row in _seen(origin, tls, path)]
    assert methods.count("ran") == methods.count("POST tools/call") == outcomes.count("done")
    assert outcomes.count("done") >= 7, outcomes


def test_a_read_the_server_reset_on_a_pooled_connection_goes_once_more_on_a_new_one(
    tls: TestAuthority, origin: str
) -> None:
    """The server reads any second request on a connection and resets it. A tools/list is a
    read: sent once more, on a new connection, within the operation's budget, and succeeds."""
    path = "/reset-reused/0/list/mcp"
    client = _client(tls)
    endpoint = Endpoint(identifier="reset", url=f"{origin}{path}", budget_seconds=BUDGET)
    for _ in range(2):
        assert len(client.list_tools(endpoint)) == 1  # a resend past the budget would time out
    rows = _seen(origin, tls, path)
    methods = [row["method"] for row in rows]
    # Each operation's tools/list met the pooled connection (reset) and went again on a new one.
    assert methods.count("reset") == 2 and methods.count("POST tools/list") == 4, methods
    assert [row["carried"] for row in rows if row["method"] == "POST tools/list"] == ["2", "1", "2", "1"]


def test_a_call_the_server_reset_after_reading_it_runs_once_and_is_interrupted(
    tls: TestAuthority, origin: str
) -> None:
    """The tools/call reaches the server on the pooled connection, is read (and, for all the
    client can know, run), and the connection is reset: 'interrupted', not accepted, the
    message saying the tool may have run; the call is not sent again."""
    path = "/reset-reused/0/call/mcp"
    client = _client(tls)
    endpoint = Endpoint(identifier="reset", url=f"{origin}{path}", budget_seconds=BUDGET)
    client.ping(endpoint)  # server/discover: the 2026 era, and a connection in the pool
    with pytest.raises(McpTransportError) as failed:
        client.call_tool(endpoint, "echo", {"text": "x"})
    assert (failed.value.kind, failed.value.accepted) == ("interrupted", False)
    assert "'echo'" in str(failed.value) and "may have run" in str(failed.value)
    methods = [row["method"] for row in _seen(origin, tls, path)]
    assert methods.count("ran") == methods.count("POST tools/call") == 1, methods


def test_a_call_whose_write_failed_on_a_pooled_connection_goes_once_more(
    tls: TestAuthority, origin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pooled connection whose write side is gone (shut here, under the TLS layer, and the
    check before reuse made blind to it): the write fails, which proves the call never left,
    so it goes on a new connection and runs once."""
    path = "/idle-close/30/write/mcp"
    client = _client(tls)
    endpoint = Endpoint(identifier="write", url=f"{origin}{path}", budget_seconds=BUDGET)
    client.ping(endpoint)
    (entries,) = process_pool()._idle.values()
    sock = entries[0].connection.sock
    with socket.socket(fileno=os.dup(sock.fileno())) as handle:
        handle.shutdown(socket.SHUT_WR)
    monkeypatch.setattr(WatchedHTTPSConnection, "is_connected", property(lambda self: True))
    assert client.call_tool(endpoint, "echo", {"text": "x"}).text == "done"
    methods = [row["method"] for row in _seen(origin, tls, path)]
    assert methods.count("ran") == methods.count("POST tools/call") == 1, methods


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/trickle/0.3/mcp", "timeout"),
        ("/endless/0/mcp", "too_large"),
        ("/leg/work/303-keep-alive/pool/mcp", "redirect"),
    ],
)
def test_a_connection_whose_leg_failed_is_closed_never_pooled(
    tls: TestAuthority, origin: str, path: str, kind: str
) -> None:
    """A leg cut at its grant, stopped at the body cap or answered with a 3xx (one that offers
    to keep the connection) closes its connection: no later request of any operation rides it,
    though the connection of the legs before it served them all."""
    client = _client(tls)
    endpoint = Endpoint(identifier="failed", url=f"{origin}{path}", budget_seconds=2)
    with pytest.raises(McpTransportError) as failed:
        client.call_tool(endpoint, "echo", {"text": "x"})
    assert failed.value.kind == kind
    after = f"/record/0/after-{kind}/mcp"
    for _ in range(2):
        client.call_tool(Endpoint(identifier="after", url=f"{origin}{after}"), "echo", {"text": "x"})
    rows = _seen(origin, tls, path)
    index = next(index for index, row in enumerate(rows) if row["method"] == "POST tools/call")
    earlier, call, later = rows[:index], rows[index], rows[index + 1 :] + _seen(origin, tls, after)
    assert all(row["connection"] == call["connection"] for row in earlier if "connection" in row)
    assert all(row.get("connection") != call["connection"] for row in later), (call, later)


def test_a_forked_child_never_uses_its_parents_connections(tls: TestAuthority, sdk: str) -> None:
    """After a fork (gunicorn --preload), the child starts with an empty pool and dials its own
    connection; the parent's kept connection still serves the parent afterwards."""
    client = _client(tls, keepalive_seconds=30)
    endpoint = Endpoint(identifier="fork", url=sdk)
    client.call_tool(endpoint, "echo", {"text": "parent"})
    assert process_pool().count() == 1
    before = _handshakes(sdk, tls)
    with warnings.catch_warnings():
        # Python 3.12 warns about fork() in a process with threads (the watchdog's, the SDK's).
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        status = 1
        try:
            empty = process_pool().count() == 0
            ok = client.call_tool(endpoint, "echo", {"text": "child"}).text == "child"
            status = 0 if empty and ok else 2
        finally:
            os._exit(status)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert _dialled_since(sdk, tls, before) == 1  # the child's own connection
    middle = _handshakes(sdk, tls)
    assert client.call_tool(endpoint, "echo", {"text": "again"}).text == "again"
    assert _dialled_since(sdk, tls, middle) == 0  # the parent's connection, still whole


def test_a_burst_of_calls_with_a_long_budget_leaves_no_leg_in_the_watchdog(
    tls: TestAuthority, sdk: str
) -> None:
    """100 calls (each several legs) with a 3600 s budget against the SDK server: every leg
    leaves the watchdog when it ends, so nothing piles up until its due time an hour later
    (issue 25, item 10)."""
    client = _client(tls)
    endpoint = Endpoint(identifier="burst", url=sdk, budget_seconds=3600)
    before = len(_WATCHMAN._due)
    for number in range(100):
        assert client.call_tool(endpoint, "echo", {"text": str(number)}).text == str(number)
    assert len(_WATCHMAN._due) <= before


@pytest.mark.parametrize("shape", ["pending", "buffered"])
def test_bytes_past_an_answer_never_reach_the_next_call(tls: TestAuthority, origin: str, shape: str) -> None:
    """A server sends a forged answer behind its real one, on the same TLS connection: left in
    the TLS layer (``pending``, where the socket poll before reuse cannot see it) or read ahead
    with the head (``buffered``). The next call to that origin, another server row, gets its own
    answer on a new connection, never the forgery (issue 25, item 6)."""
    client = _client(tls)
    victim = Endpoint(identifier="victim", url=f"{origin}/leftover/victim/{shape}/mcp", budget_seconds=BUDGET)
    assert client.ping(victim).era == "modern"
    spoiler = Endpoint(identifier="spoiler", url=f"{origin}/leftover/{shape}/mcp", budget_seconds=BUDGET)
    assert client.call_tool(spoiler, "echo", {"text": "x"}).text == "done"
    assert process_pool().count() == 0
    assert client.call_tool(victim, "echo", {"text": "x"}).text == "done"


def test_an_answer_with_an_invalid_session_id_closes_its_connection(tls: TestAuthority, origin: str) -> None:
    """An initialize answered whole and kept alive, but with a session id no header may carry
    back (spaces): the operation ends ``malformed``, checked inside the leg, so that answer's
    connection is closed, not kept for the next leg (issue 25, item 12)."""
    client = _client(tls)
    report = client.ping(
        Endpoint(identifier="bad-session", url=f"{origin}/bad-session/0/mcp", budget_seconds=BUDGET)
    )
    assert report.failure is not None and report.failure.kind == "malformed", report
    assert "invalid session id" in report.error
    assert process_pool().count() == 0


def test_a_pooled_connection_is_bounded_by_the_budget_like_a_new_one(tls: TestAuthority, origin: str) -> None:
    """A warm connection to a server that then stalls the call: the watchdog cuts it at the
    budget (the worst case stays the budget plus under a second), and it is closed, not kept."""
    client = _client(tls)
    endpoint = Endpoint(identifier="stall", url=f"{origin}/slow-work/30/mcp", budget_seconds=2)
    client.ping(endpoint)
    assert process_pool().count() == 1
    started = time.monotonic()
    with pytest.raises(McpTransportError) as failed:
        client.call_tool(endpoint, "echo", {"text": "x"})
    assert failed.value.kind == "timeout"
    assert time.monotonic() - started < 2 + 1
    assert process_pool().count() == 0


def test_oauth_legs_keep_their_connections_by_the_same_rules(tls: TestAuthority) -> None:
    """Two operations' OAuth legs (a metadata GET each) to one authorization server ride one
    connection: one TLS handshake, asked for by the server's name."""
    with tls_adversary(tls.issue("auth.test")) as (port, log):
        metadata = f"https://auth.test:{port}/.well-known/oauth-authorization-server"
        for _ in range(2):
            deadline = OperationDeadline(BUDGET, MonotonicClock(), "oauth")
            connection = ConnectionSettings(
                allow_private_networks=True, resolver=resolve_test_names, ca_bundle=str(tls.bundle)
            )
            with OAuthLegs("oauth", deadline, connection) as legs:
                assert legs.get(metadata, "metadata").status == 405
        assert [entry["sni"] for entry in log_entries(log) if "sni" in entry] == ["auth.test"]
        assert process_pool().count() == 1
