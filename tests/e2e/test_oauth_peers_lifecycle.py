"""The OAuth peers' own lifecycle: a configurable token lifetime, and nothing left running."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import requests

from tests.oauth_peers import REQUEST_SECONDS, mcp_request, start_oauth_peers

pytestmark = pytest.mark.e2e


def _processes_mentioning(text: str) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if text in command:
            found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_stopping_the_peers_leaves_no_process_behind():
    """Gunicorn's master and worker and the MCP server all exist while running and are gone after."""
    with start_oauth_peers() as peers:
        auth = peers.auth
        tokens = auth.authorization_code_tokens(auth.public_client, resource=peers.mcp.url)
        assert mcp_request(peers.mcp.url, "tools/list", token=tokens["access_token"]).status_code == 200
        # The worker that answered names itself in the request log (its title may differ).
        workers = {entry["pid"] for entry in auth.requests_seen()}
        pids = _processes_mentioning(str(auth.directory)) | _processes_mentioning(auth.issuer) | workers
        assert os.getpid() not in pids
        assert len(pids) >= 3, pids  # gunicorn master, its worker, the MCP server
        assert all(_alive(pid) for pid in pids)

    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in pids if _alive(pid)] == []
    assert not auth.directory.exists()


def test_access_token_lifetime_is_configurable_and_expiry_is_enforced():
    """With 2-second access tokens the MCP server refuses an expired token; a refresh gives a working one."""
    with start_oauth_peers(access_token_seconds=2) as peers:
        auth, client = peers.auth, peers.auth.public_client
        tokens = auth.authorization_code_tokens(client, resource=peers.mcp.url)
        issued = time.monotonic()
        assert tokens["expires_in"] == 2
        assert mcp_request(peers.mcp.url, "tools/list", token=tokens["access_token"]).status_code == 200

        time.sleep(max(0.0, issued + 3.5 - time.monotonic()))
        expired = mcp_request(peers.mcp.url, "tools/list", token=tokens["access_token"])
        refreshed = requests.post(
            auth.token_endpoint,
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client.client_id,
            },
            timeout=REQUEST_SECONDS,
        )

        assert expired.status_code == 401
        assert refreshed.status_code == 200, refreshed.text
        fresh = refreshed.json()["access_token"]
        assert mcp_request(peers.mcp.url, "tools/list", token=fresh).status_code == 200
