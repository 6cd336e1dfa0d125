"""DatabaseGrantStore: encrypted at rest, own-transaction writes, one refresh across threads and
processes, every wait inside the operation's budget, database failures typed and never silent."""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.utils import OperationalError
from django.test import override_settings

from nr_llm.authorization import store as store_module
from nr_llm.authorization.service import oauth_settings
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp.oauth import ClientRegistration, Grant
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from nr_llm.mcp.wire.errors import AuthorizationError, McpTransportError
from nr_llm.models import McpServer, OAuthGrantRecord
from tests.authorization.helpers import (
    PUBLIC_BASE_URL,
    SETTINGS,
    callback_path,
    oauth_server,
    operator,
    press_connect,
)
from tests.e2e.test_import_workers import _database_url
from tests.oauth_peers import OAuthPeers, fingerprint
from tests.oauth_scripted import Peer, TokenEndpoint, authorization_server, operation_tokens, peer

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]

GRANT = Grant(
    access_token="access-token-value-1234567890",
    refresh_token="refresh-token-value-1234567890",
    issuer="https://as.example",
    token_endpoint="https://as.example/token",
    resource="https://mcp.example/mcp",
    client=ClientRegistration(
        issuer="https://as.example", client_id="cid", client_secret="client-secret-0987654321"
    ),
    expires_at=1_900_000_000.0,
    scopes=("mcp:tools",),
)


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": _database_url(),
        "NR_LLM_PUBLIC_BASE_URL": PUBLIC_BASE_URL,
    }


def _server() -> McpServer:
    return McpServer.objects.create(
        identifier="stored", name="Stored", url="https://mcp.example/mcp", auth_placement="oauth"
    )


def test_a_saved_grant_reads_back_whole_and_is_encrypted_at_rest() -> None:
    """Every field survives the round trip; no secret is in any column in clear text."""
    _server()
    store = DatabaseGrantStore()
    store.save("stored", GRANT)
    assert store.load("stored") == GRANT
    assert store.load_registration("stored", "https://as.example") == GRANT.client
    assert store.load_registration("stored", "https://other.example") is None
    row = OAuthGrantRecord.objects.values().get()
    text = json.dumps(row, default=str)
    for secret in (GRANT.access_token, GRANT.refresh_token, GRANT.client.client_secret):
        assert secret is not None and secret not in text
    expires = row["expires_at"]
    assert expires is not None and expires.timestamp() == GRANT.expires_at


def test_a_rotated_token_survives_the_callers_rollback() -> None:
    """save() commits on its own: the caller's atomic block rolling back does not take it along."""
    _server()
    store = DatabaseGrantStore()
    store.save("stored", GRANT)
    rotated = dataclasses.replace(GRANT, access_token="access-2", refresh_token="refresh-2")
    with pytest.raises(RuntimeError), transaction.atomic():
        store.save("stored", rotated)
        McpServer.objects.filter(identifier="stored").update(name="changed in the rolled back block")
        raise RuntimeError("the tool call failed after the refresh")
    assert store.load("stored") == rotated
    assert McpServer.objects.get(identifier="stored").name == "Stored"


def test_inside_exclusive_load_rereads_and_save_commits_at_once() -> None:
    """Under the lock a load sees what another writer committed before; the save is kept."""
    _server()
    store = DatabaseGrantStore()
    store.save("stored", GRANT)
    renewed = dataclasses.replace(GRANT, access_token="access-3", refresh_token="refresh-3")
    with store.exclusive("stored", OperationDeadline(20, MonotonicClock(), "stored")):
        assert store.load("stored") == GRANT
        store.save("stored", renewed)
        assert store.load("stored") == renewed
    assert DatabaseGrantStore().load("stored") == renewed


def test_forget_drops_tokens_and_mark_attention_is_cleared_by_a_new_grant() -> None:
    """Disconnect leaves no token; "needs reconnect" lasts until the next grant is saved."""
    _server()
    store = DatabaseGrantStore()
    store.save("stored", GRANT)
    store.mark_attention("stored", "refresh_refused", ("mcp:tools",))
    assert OAuthGrantRecord.objects.get().attention_reason == "refresh_refused"
    store.save("stored", GRANT)
    assert OAuthGrantRecord.objects.get().attention_reason == ""
    store.forget("stored")
    assert store.load("stored") is None
    assert OAuthGrantRecord.objects.get().refresh_token_ciphertext == ""


def test_two_worker_processes_at_expiry_send_one_refresh_and_keep_the_rotated_token(
    oauth_peers: OAuthPeers, tmp_path: Path
) -> None:
    """PostgreSQL and MariaDB: two processes needing a token as it expires → exactly one refresh request at
    the authorization server, both call the MCP server successfully with the same new token,
    and the stored refresh token is the rotated one."""
    if connection.vendor == "sqlite":
        pytest.skip("two processes need a shared database server: PostgreSQL or MariaDB")
    with override_settings(**SETTINGS):
        server = oauth_server(oauth_peers)
        client = operator()
        location = oauth_peers.auth.approve(press_connect(client, server)["Location"])
        client.get(callback_path(location))
    store = DatabaseGrantStore()
    old = store.load("protected")
    assert old is not None and old.refresh_token
    # Expired as far as the client can tell: the next operation must refresh first.
    store.save("protected", dataclasses.replace(old, expires_at=time.time() - 1))
    before = oauth_peers.auth.token_requests("refresh_token")
    env = _env()
    start_at = f"{time.time() + 4:.3f}"  # both import Django first, then start together
    command = [sys.executable, "-m", "tests.authorization.refresh_worker", "protected", start_at]
    processes = [
        subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err.decode()[-3000:]
        outputs.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert [o["status"] for o in outputs] == [200, 200]
    assert outputs[0]["token"] == outputs[1]["token"]
    assert oauth_peers.auth.token_requests("refresh_token") == before + 1
    [refresh] = oauth_peers.auth.requests_seen("token", "refresh_token")[before:]
    assert refresh["refresh_token_fingerprint"] == fingerprint(old.refresh_token)
    new = store.load("protected")
    assert new is not None and new.refresh_token and new.refresh_token != old.refresh_token
    assert new.access_token != old.access_token


# -- single flight and its waits, on a scripted authorization server (tests/oauth_scripted.py) --

URL = "http://127.0.0.1:9/mcp"  # never dialled: these operations end before any MCP leg


def _expired_grant(auth: Peer, refresh_token: str = "rt0") -> McpServer:
    server = McpServer.objects.create(identifier="flight", name="Flight", url=URL, auth_placement="oauth")
    DatabaseGrantStore().save(
        "flight",
        Grant(
            access_token="AT0",
            refresh_token=refresh_token,
            issuer=auth.origin,
            token_endpoint=auth.url("/token"),
            resource=URL,
            client=ClientRegistration(auth.origin, "cid"),
            expires_at=time.time() - 10,
            mcp_url=URL,
        ),
    )
    return server


def _operation(server: McpServer, budget: float = 10) -> Any:
    # A store per operation, as the app builds one (endpoints.py → service.oauth_settings).
    return operation_tokens(server.identifier, server.url, oauth_settings(server), budget=budget)


def test_two_threads_with_a_store_each_spend_the_refresh_token_once() -> None:
    """Two operations of one process, each with its own store, find the token expired at once
    (the token endpoint takes a second): exactly one refresh request, with rt0; both get its
    token; nothing untyped escapes (it was OperationalError 'database is locked' on SQLite), and
    the process's lock map is empty afterwards."""
    with peer() as auth:
        token = authorization_server(auth, token=TokenEndpoint(delay=1.0))
        server = _expired_grant(auth)
        barrier = threading.Barrier(2)
        results: list[object] = []

        def operate() -> None:
            try:
                tokens = _operation(server)
                barrier.wait(10)
                try:
                    results.append(tokens.bearer())
                finally:
                    tokens.close()
            except Exception as exc:
                results.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=operate) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == ["access-1", "access-1"]
    assert [form["refresh_token"] for form in token.forms] == ["rt0"]
    # A finished operation may sit in a reference cycle until the collector runs; what the
    # weak map must not do is keep a lock alive once nothing else does.
    gc.collect()
    assert len(store_module._SERVER_LOCKS) == 0
    stored = DatabaseGrantStore().load("flight")
    assert stored is not None and stored.refresh_token == "refresh-1"


def test_a_refresh_held_by_another_thread_past_the_budget_is_deadline_exhausted() -> None:
    """Another operation's refresh outlasts this one's 3 s budget: deadline_exhausted within the
    budget (+ 1 s at most), and this operation sends nothing."""
    with peer() as auth:
        token = authorization_server(auth, token=TokenEndpoint(delay=6.0))
        server = _expired_grant(auth)
        slow = _operation(server, budget=20)

        def refresh_slowly() -> None:
            try:
                slow.bearer()
            finally:
                connection.close()

        other = threading.Thread(target=refresh_slowly)
        other.start()
        try:
            _wait_until(lambda: len(token.forms) == 1)
            failure, waited = _failed_bearer(_operation(server, budget=3))
        finally:
            other.join(30)
            slow.close()
    assert failure.kind == "deadline_exhausted" and waited < 4.0, waited
    assert len(token.forms) == 1


@pytest.fixture
def lock_held_elsewhere(tmp_path: Path) -> Iterator[Any]:
    """Another worker process holding the grant row lock for 8 s (tests/authorization/lock_worker.py)."""
    processes: list[subprocess.Popen[bytes]] = []

    def hold(identifier: str) -> None:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.authorization.lock_worker", identifier, "8"],
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        processes.append(process)
        assert process.stdout is not None and process.stdout.readline().strip() == b"locked"

    yield hold
    for process in processes:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.wait(20)
        process.stdout.close()


def test_a_row_lock_held_by_another_process_past_the_budget_is_deadline_exhausted(
    lock_held_elsewhere,
) -> None:
    """PostgreSQL and MariaDB: another process holds the grant row for 8 s; an operation with a
    3 s budget ends deadline_exhausted within budget + 1 s (it waited 8 s, then refreshed
    anyway), and its refresh is never sent."""
    if connection.vendor == "sqlite":
        pytest.skip("a row lock across processes needs a database server: PostgreSQL or MariaDB")
    with peer() as auth:
        token = authorization_server(auth)
        server = _expired_grant(auth)
        lock_held_elsewhere("flight")
        failure, waited = _failed_bearer(_operation(server, budget=3))
    assert failure.kind == "deadline_exhausted" and waited < 4.0, waited
    assert "waiting for another operation's renewal" in str(failure)
    assert token.forms == []


def _the_stores_own(frame: Any) -> bool:
    """A commit of the grant store's own transaction: on its lock thread, or in place on the
    caller's thread (a caller with no transaction open), where the store's frame is on the stack."""
    if threading.current_thread().name.startswith("nr-llm-grant"):
        return True
    while frame is not None:
        if frame.f_code.co_filename.endswith(os.path.join("authorization", "store.py")):
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def failing_commits(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Commits of the store's own threads fail while ``failing_commits[0]()`` is true (always, unless
    a test sets its own condition), as a database that cannot write would."""
    when: list[Any] = [lambda: True]
    real = BaseDatabaseWrapper._commit  # type: ignore[attr-defined]

    def commit(self: BaseDatabaseWrapper) -> None:
        if _the_stores_own(sys._getframe()) and when[0]():
            raise OperationalError("injected commit failure")
        real(self)

    monkeypatch.setattr(BaseDatabaseWrapper, "_commit", commit)
    return when


def test_a_rotated_grant_that_cannot_be_committed_fails_the_operation_and_says_so(
    caplog: pytest.LogCaptureFixture, failing_commits: list[Any]
) -> None:
    """The refresh succeeded (rt0 spent, refresh-1 issued) but the commit of the rotated grant
    fails: the operation fails typed (grant_store) instead of going on with the new access token,
    an ERROR names the server and what to do, no token is in the log or the message, and the
    database still holds rt0 (it used to go on silently)."""
    with peer() as auth:
        token = authorization_server(auth)
        failing_commits[0] = lambda: bool(token.forms)  # from the moment the refresh was sent
        server = _expired_grant(auth)
        tokens = _operation(server)
        with caplog.at_level(logging.ERROR, "nr_llm.mcp.oauth"), pytest.raises(AuthorizationError) as caught:
            tokens.bearer()
        tokens.close()
        failing_commits[0] = lambda: False
    assert (caught.value.kind, caught.value.reason) == ("authorization_failed", "grant_store")
    assert "could not be stored" in str(caught.value) and "reconnect" in str(caught.value)
    assert [form["refresh_token"] for form in token.forms] == ["rt0"]
    [record] = [r for r in caplog.records if r.name == "nr_llm.mcp.oauth"]
    assert record.levelno == logging.ERROR and "flight" in record.getMessage()
    for text in (record.getMessage(), str(caught.value)):
        assert "access-1" not in text and "refresh-1" not in text and "rt0" not in text
    stored = DatabaseGrantStore().load("flight")
    assert stored is not None and stored.refresh_token == "rt0"


def test_a_save_outside_the_lock_that_cannot_commit_is_a_typed_error(failing_commits: list[Any]) -> None:
    """Connect's save (its own transaction) raises grant_store, never the driver's error."""
    _server()
    with pytest.raises(AuthorizationError) as caught:
        DatabaseGrantStore().save("stored", GRANT)
    assert (caught.value.kind, caught.value.reason) == ("authorization_failed", "grant_store")
    assert "OperationalError" in str(caught.value) and GRANT.access_token not in str(caught.value)


def _failed_bearer(tokens: Any) -> tuple[McpTransportError, float]:
    """The error ``tokens.bearer()`` ends in, and how long it took."""
    started = time.monotonic()
    try:
        with pytest.raises(McpTransportError) as caught:
            tokens.bearer()
    finally:
        tokens.close()
    return caught.value, time.monotonic() - started


def _wait_until(condition: Any, seconds: float = 10) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)
