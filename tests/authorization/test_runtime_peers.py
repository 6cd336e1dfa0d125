"""The stored grant at work on the real peers: imports and tool calls use it, a refused refresh
marks the server "needs reconnect" and makes its tools unavailable to the agent loop."""

from __future__ import annotations

import dataclasses
import time
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import override_settings
from django.urls import reverse

from nr_llm import tools
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, OAuthGrantRecord
from tests.admin_clients import messages_of, post_action
from tests.authorization.helpers import SETTINGS, callback_path, oauth_server, operator, press_connect
from tests.oauth_peers import OAuthPeers

CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("settings_for_oauth")]


@pytest.fixture
def settings_for_oauth() -> object:
    with override_settings(**SETTINGS):
        yield


def _connected(peers: OAuthPeers) -> McpServer:
    server = oauth_server(peers)
    client = operator()
    client.get(callback_path(peers.auth.approve(press_connect(client, server)["Location"])))
    assert DatabaseGrantStore().load(server.identifier) is not None
    return server


def test_import_and_a_tool_call_use_the_stored_grant_and_refresh_it_when_expired(
    oauth_peers: OAuthPeers,
) -> None:
    """Import lists the protected tools; echo runs; with the token expired the next call refreshes
    once and succeeds, and the rotated tokens are stored."""
    server = _connected(oauth_peers)
    report = import_catalogue(server)
    assert McpTool.objects.filter(server=server, remote_name="echo").exists(), report
    McpTool.objects.filter(server=server).update(enabled=True)
    echo = McpTool.objects.get(server=server, remote_name="echo")
    first = tools.execute(echo.tool_name, {"text": "hello"})
    assert not first.is_error and "hello" in first.text, first.text

    store = DatabaseGrantStore()
    old = store.load(server.identifier)
    assert old is not None
    store.save(server.identifier, dataclasses.replace(old, expires_at=time.time() - 1))
    before = oauth_peers.auth.token_requests("refresh_token")
    second = tools.execute(echo.tool_name, {"text": "again"})
    assert not second.is_error and "again" in second.text, second.text
    assert oauth_peers.auth.token_requests("refresh_token") == before + 1
    new = store.load(server.identifier)
    assert new is not None and new.refresh_token != old.refresh_token


def test_a_refused_refresh_makes_the_tool_unavailable_and_the_server_need_reconnect(
    oauth_peers: OAuthPeers,
) -> None:
    """A spent refresh token (the grant's family revoked at the AS) → authorization_required:
    the agent reads "unavailable", the admin reads "needs reconnect"."""
    server = _connected(oauth_peers)
    import_catalogue(server)
    McpTool.objects.filter(server=server).update(enabled=True)
    echo = McpTool.objects.get(server=server, remote_name="echo")
    store = DatabaseGrantStore()
    grant = store.load(server.identifier)
    assert grant is not None
    # Revoke the grant at the authorization server, then let the client think the token expired.
    client = operator("revoker")
    client.post(f"/admin/nr_llm/mcpserver/{server.pk}/oauth/disconnect/")
    store.save(server.identifier, dataclasses.replace(grant, expires_at=time.time() - 1))
    result = tools.execute(echo.tool_name, {"text": "x"})
    assert result.is_error and "is unavailable" in result.text, result.text
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "refresh_refused"
    assert grant.refresh_token is not None and grant.refresh_token not in result.text
    assert grant.access_token not in result.text


def test_test_connection_on_a_revoked_grant_marks_the_server_needs_reconnect(oauth_peers: OAuthPeers) -> None:
    """The grant revoked at the AS while a copy is still stored: Test connection's ping gets a 401,
    its refresh is refused, and the admin says so; the changelist row reads "needs reconnect"."""
    server = _connected(oauth_peers)
    store = DatabaseGrantStore()
    grant = store.load(server.identifier)
    assert grant is not None and grant.refresh_token is not None
    operator("revoker").post(f"/admin/nr_llm/mcpserver/{server.pk}/oauth/disconnect/")
    # Unexpired as far as the client knows: the 401 of the revoked token is what sends it to refresh.
    store.save(server.identifier, grant)
    before = oauth_peers.auth.token_requests("refresh_token")
    client = operator("tester")
    [(level, text)] = messages_of(post_action(client, CHANGELIST, "test_connection_action", [server]))
    assert level == "error"
    assert text.startswith("Connection to protected failed: "), text
    assert "refused to renew the grant" in text, text
    assert text.endswith("It is now marked “needs reconnect”: open the server and press Connect."), text
    assert oauth_peers.auth.token_requests("refresh_token") == before + 1
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "refresh_refused"
    page = client.get(CHANGELIST).content.decode()
    assert "needs reconnect: the authorization server refused to renew the grant" in page
    for secret in (grant.access_token, grant.refresh_token):
        assert secret not in text and secret not in page


def test_test_connection_on_a_working_grant_succeeds_and_marks_nothing(oauth_peers: OAuthPeers) -> None:
    """A connected server answers Test connection with the stored token: success, no refresh, and
    the row stays "connected until …" with no attention reason."""
    server = _connected(oauth_peers)
    client = operator("tester")
    before = oauth_peers.auth.token_requests("refresh_token")
    [(level, text)] = messages_of(post_action(client, CHANGELIST, "test_connection_action", [server]))
    assert (level, text.split(":")[0]) == ("success", "Connection to protected"), text
    assert "needs reconnect" not in text
    assert oauth_peers.auth.token_requests("refresh_token") == before
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == ""
    page = client.get(CHANGELIST).content.decode()
    assert "connected until" in page and "needs reconnect" not in page


def test_a_tool_needing_more_scopes_needs_reconnect_and_the_reconnect_asks_for_the_union(
    oauth_peers: OAuthPeers,
) -> None:
    """admin_report needs mcp:admin: its 403 insufficient_scope makes the tool unavailable and the
    server "needs reconnect" with that scope; the operator's next Connect asks for what was
    granted plus what was missing, and afterwards the tool answers."""
    server = _connected(oauth_peers)
    granted = DatabaseGrantStore().load(server.identifier)
    assert granted is not None and "mcp:admin" not in granted.scopes
    import_catalogue(server)
    McpTool.objects.filter(server=server).update(enabled=True)
    report = McpTool.objects.get(server=server, remote_name="admin_report")

    refused = tools.execute(report.tool_name, {})
    assert refused.is_error and "is unavailable" in refused.text, refused.text
    record = OAuthGrantRecord.objects.get(server=server)
    assert record.attention_reason == "insufficient_scope"
    assert "mcp:admin" in record.attention_scopes.split()

    client = operator("stepper")
    location = press_connect(client, server)["Location"]
    asked = parse_qs(urlsplit(location).query)["scope"][0].split()
    assert {"mcp:admin", *granted.scopes} <= set(asked), asked
    client.get(callback_path(oauth_peers.auth.approve(location)))
    answered = tools.execute(report.tool_name, {})
    assert not answered.is_error, answered.text
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == ""


def test_a_missing_scope_makes_only_the_tool_that_needs_it_unavailable(oauth_peers: OAuthPeers) -> None:
    """ "needs reconnect" after admin_report's 403 insufficient_scope is a mark, not a switch: the
    server's other tools keep answering with the grant it has, and every enabled tool, the one that
    failed included, is still offered to a model."""
    server = _connected(oauth_peers)
    import_catalogue(server)
    McpTool.objects.filter(server=server).update(enabled=True)
    names = {tool.remote_name: tool.tool_name for tool in McpTool.objects.filter(server=server)}

    assert "is unavailable" in tools.execute(names["admin_report"], {}).text
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "insufficient_scope"
    echo = tools.execute(names["echo"], {"text": "still here"})
    assert (echo.is_error, echo.text) == (False, "still here")
    assert not tools.execute(names["whoami"], {}).is_error
    assert {spec.name for spec in tools.available()} >= set(names.values())
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "insufficient_scope"


def test_a_refused_refresh_makes_every_tool_unavailable_and_each_call_asks_again(
    oauth_peers: OAuthPeers,
) -> None:
    """Once the grant cannot be renewed, every tool of the server answers "unavailable", and each
    call tries one refresh again (refused) within its own budget, until an operator connects."""
    server = _connected(oauth_peers)
    import_catalogue(server)
    McpTool.objects.filter(server=server).update(enabled=True)
    store = DatabaseGrantStore()
    grant = store.load(server.identifier)
    assert grant is not None
    operator("revoker").post(f"/admin/nr_llm/mcpserver/{server.pk}/oauth/disconnect/")
    store.save(server.identifier, dataclasses.replace(grant, expires_at=time.time() - 1))
    for tool in McpTool.objects.filter(server=server).order_by("tool_name"):
        before = oauth_peers.auth.token_requests("refresh_token")
        result = tools.execute(tool.tool_name, {"text": "x"} if tool.remote_name == "echo" else {})
        assert result.is_error and "is unavailable" in result.text, (tool.tool_name, result.text)
        assert oauth_peers.auth.token_requests("refresh_token") == before + 1
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "refresh_refused"
