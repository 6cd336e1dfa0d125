"""DatabaseGrantStore: encrypted at rest, own-transaction writes, one refresh across processes."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test import override_settings

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp.oauth import ClientRegistration, Grant
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
    with store.exclusive("stored"):
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
    """PostgreSQL: two processes needing a token as it expires → exactly one refresh request at
    the authorization server, both call the MCP server successfully with the same new token,
    and the stored refresh token is the rotated one."""
    if connection.vendor != "postgresql":
        pytest.skip("two processes need a shared database: run with DATABASE_URL=postgres://…")
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
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": _database_url(),
        "NR_LLM_PUBLIC_BASE_URL": PUBLIC_BASE_URL,
    }
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
