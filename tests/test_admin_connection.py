"""The "Test connection" admin action against a real MCP server on 127.0.0.1."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from django.urls import reverse

from nr_llm.models import ImportStatus, McpServer

from .admin_clients import csrf_checking_client, messages_of, post_action, staff_client
from .catalogue_peers import closed_port_url
from .factories import McpServerFactory
from .peers import sdk_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db]
CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")
PEER_NAME = "<b>peer</b> <script>alert(1)</script>"


@pytest.fixture(scope="module")
def peer_url() -> Iterator[str]:
    with sdk_server("--stateless", "--name", PEER_NAME, "--server-version", "9.9.9") as url:
        yield url


@pytest.fixture(autouse=True)
def _private_networks(settings):
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: only the budget ends the wait."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def _test_connection(client, *servers: McpServer):
    return post_action(client, CHANGELIST, "test_connection_action", servers)


def test_reachable_server_reports_latency_protocol_name_and_version(admin_client, peer_url):
    """The message names latency, the revision and era the server speaks (the SDK 2.3 peer is
    2026-07-28), and its escaped name and version."""
    server = McpServerFactory.create(identifier="peer", url=peer_url)
    response = _test_connection(admin_client, server)
    [(level, text)] = messages_of(response)
    assert level == "success"
    assert re.fullmatch(
        r"Connection to peer: reachable in \d+ ms · protocol 2026-07-28 \(no session, server/discover\) "
        r"· server “.*” version 9\.9\.9",
        text,
    )
    assert f"“{PEER_NAME}”" in text
    page = response.content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_success_stamps_contact_and_stores_nothing_else(admin_client, peer_url):
    """A successful test stamps last contact and latency; the import error and `updated` stay."""
    server = McpServerFactory.create(
        url=peer_url, import_status=ImportStatus.ERROR, import_error="refused: more than 500 tools"
    )
    before = McpServer.objects.get(pk=server.pk)
    _test_connection(admin_client, server)
    after = McpServer.objects.get(pk=server.pk)
    assert after.last_contact is not None
    assert after.last_latency_ms is not None
    assert (after.import_status, after.import_error) == (ImportStatus.ERROR, "refused: more than 500 tools")
    assert after.updated == before.updated


def test_unreachable_server_is_an_error_message_and_writes_nothing(admin_client):
    """A refused connection is shown as an error naming the server; no contact is recorded."""
    server = McpServerFactory.create(identifier="gone", url=closed_port_url())
    [(level, text)] = messages_of(_test_connection(admin_client, server))
    assert level == "error"
    assert text.startswith("Connection to gone failed: ")
    server.refresh_from_db()
    assert server.last_contact is None


def test_each_server_runs_under_its_own_budget(admin_client, peer_url, silent_port):
    """A silent server spends its own 1 s budget; the next server still gets its full one and answers."""
    silent = McpServerFactory.create(
        identifier="silent", name="A silent", url=f"http://127.0.0.1:{silent_port}/mcp", operation_timeout=1
    )
    live = McpServerFactory.create(identifier="live", name="B live", url=peer_url, operation_timeout=5)
    messages = {
        text.split(":")[0]: level for level, text in messages_of(_test_connection(admin_client, silent, live))
    }
    assert messages == {"Connection to silent failed": "error", "Connection to live": "success"}
    live.refresh_from_db()
    silent.refresh_from_db()
    assert live.last_contact is not None
    assert silent.last_contact is None


def test_view_only_operator_is_not_offered_the_action_and_cannot_post_it(peer_url):
    """Without change permission the action is absent, and a forged POST reaches no server."""
    client = staff_client("view_mcpserver")
    server = McpServerFactory.create(url=peer_url)
    assert "test_connection_action" not in client.get(CHANGELIST).content.decode()
    _test_connection(client, server)
    server.refresh_from_db()
    assert server.last_contact is None


def test_action_runs_only_on_post(admin_client, peer_url):
    """The same parameters in a GET do not run the action."""
    server = McpServerFactory.create(url=peer_url)
    admin_client.get(CHANGELIST, {"action": "test_connection_action", "_selected_action": [server.pk]})
    server.refresh_from_db()
    assert server.last_contact is None


def test_action_without_csrf_token_is_refused(peer_url):
    """A cross-site POST is rejected before any server is contacted."""
    client = csrf_checking_client()
    server = McpServerFactory.create(url=peer_url)
    response = client.post(CHANGELIST, {"action": "test_connection_action", "_selected_action": [server.pk]})
    assert response.status_code == 403
    server.refresh_from_db()
    assert server.last_contact is None
