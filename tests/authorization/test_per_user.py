"""Per-user grants on the real peers (django-oauth-toolkit, the SDK's protected MCP server): two
users each connect their own account through the site's Connect pages, each call acts as its
user (the server's whoami says so), a user without a grant gets a working connect URL, and
disconnect, an operator's revocation and user deletion remove the grant."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse

from nr_llm.authorization.actors import NeedsAuthorization, resolve
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp import Endpoint, McpTransportError
from nr_llm.models import McpServer, OAuthGrantRecord, PendingAuthorization, UserGrantRecord
from nr_llm.servers.endpoints import endpoint_for, mcp_client
from tests.admin_clients import post_action
from tests.authorization.helpers import PUBLIC_BASE_URL, SETTINGS, callback_path, oauth_server, operator
from tests.oauth_peers import OAuthPeers, mcp_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("settings_for_oauth")]


@pytest.fixture
def settings_for_oauth() -> object:
    with override_settings(**SETTINGS):
        yield


def _site_user(username: str) -> tuple[User, Client]:
    user = User.objects.create_user(username, password="pw")
    client = Client()
    client.force_login(user)
    return user, client


def _per_user(peers: OAuthPeers) -> McpServer:
    return oauth_server(peers, oauth_mode="per_user")


def _connect(peers: OAuthPeers, client: Client, server: McpServer, as_who: str) -> Any:
    """The user's browser: our Connect, the AS's login and consent as ``as_who``, our callback."""
    started = client.get(reverse("nr_llm_connect", args=[server.identifier]))
    assert started.status_code == 302, started
    assert started["Location"].startswith(peers.auth.authorization_endpoint)
    location = peers.auth.approve(started["Location"], username=as_who)
    return client.get(callback_path(location))


def _whoami(server: McpServer, user: Any) -> dict[str, Any]:
    endpoint = resolve(server, user)
    assert isinstance(endpoint, Endpoint), endpoint
    outcome = mcp_client().call_tool(endpoint, "whoami", {})
    assert not outcome.is_error, outcome.text
    assert isinstance(outcome.structured, dict), outcome
    return outcome.structured


def test_each_user_acts_as_themselves(oauth_peers: OAuthPeers, caplog: pytest.LogCaptureFixture) -> None:
    """Alice connects as the AS's "operator", Bob as "member"; whoami answers each with their own
    subject; the shared row holds no token; no token shows in logs or the pages."""
    caplog.set_level(logging.DEBUG)
    server = _per_user(oauth_peers)
    alice, alice_browser = _site_user("alice")
    bob, bob_browser = _site_user("bob")
    landed = _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)
    assert landed.status_code == 302 and landed["Location"] == reverse("nr_llm_connected_accounts")
    _connect(oauth_peers, bob_browser, server, "member")

    as_alice = _whoami(server, alice)
    as_bob = _whoami(server, bob)
    assert (as_alice["subject"], as_bob["subject"]) == (oauth_peers.auth.username, "member")
    assert not OAuthGrantRecord.objects.filter(server=server).exclude(access_token_ciphertext="").exists()
    assert UserGrantRecord.objects.filter(server=server).count() == 2

    grants = [DatabaseGrantStore(user.pk).load(server.identifier) for user in (alice, bob)]
    assert all(grant is not None for grant in grants)
    secrets = [s for grant in grants if grant for s in (grant.access_token, grant.refresh_token) if s]
    page = alice_browser.get(reverse("nr_llm_connected_accounts")).content.decode()
    assert "Connected" in page and "Disconnect" in page
    admin = operator()
    admin_pages = [
        admin.get(reverse("admin:nr_llm_usergrantrecord_changelist")).content.decode(),
        admin.get(
            reverse("admin:nr_llm_usergrantrecord_change", args=[UserGrantRecord.objects.first().pk])  # type: ignore[union-attr]
        ).content.decode(),
    ]
    assert "alice" in admin_pages[0] and "bob" in admin_pages[0]
    for secret in secrets:
        for shown in [page, *admin_pages, caplog.text]:
            assert secret not in shown


def test_a_user_without_a_grant_is_not_contacted_and_gets_a_working_url(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    carol, carol_browser = _site_user("carol")
    answer = resolve(server, carol)
    assert isinstance(answer, NeedsAuthorization)
    assert answer.reason == "not_connected"
    assert answer.connect_url == PUBLIC_BASE_URL + reverse("nr_llm_connect", args=["protected"])
    assert "do not retry" in answer.model_text("mcp_protected_whoami")
    followed = carol_browser.get(answer.connect_url.removeprefix(PUBLIC_BASE_URL))
    assert followed.status_code == 302 and followed["Location"].startswith(
        oauth_peers.auth.authorization_endpoint
    )
    from django.contrib.auth.models import AnonymousUser

    assert isinstance(resolve(server, AnonymousUser()), NeedsAuthorization)
    assert resolve(server, None).reason == "no_actor"  # type: ignore[union-attr]


def test_a_per_user_server_never_uses_a_shared_grant(oauth_peers: OAuthPeers) -> None:
    """Connected as shared first, then switched to per user: a call naming no user is refused
    before any request, though the shared row still holds the operator's token."""
    server = oauth_server(oauth_peers)
    admin = operator()
    started = admin.post(reverse("admin:nr_llm_mcpserver_oauth_connect", args=[server.pk]))
    admin.get(callback_path(oauth_peers.auth.approve(started["Location"])))
    assert DatabaseGrantStore().load(server.identifier) is not None
    McpServer.objects.filter(pk=server.pk).update(oauth_mode="per_user")
    server.refresh_from_db()
    with pytest.raises(McpTransportError) as caught:
        mcp_client().call_tool(endpoint_for(server), "whoami", {})
    assert caught.value.kind == "missing_credential"
    assert isinstance(resolve(server, User.objects.get(username="root")), NeedsAuthorization)


def test_a_state_for_another_user_and_a_replayed_callback_are_refused(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    _, alice_browser = _site_user("alice")
    _, mallory_browser = _site_user("mallory")
    started = alice_browser.get(reverse("nr_llm_connect", args=[server.identifier]))
    location = oauth_peers.auth.approve(started["Location"])
    stolen = mallory_browser.get(callback_path(location), follow=True)
    assert "started by another user" in stolen.content.decode()
    assert not UserGrantRecord.objects.exists()
    # The state was spent by that attempt: the rightful user's replay finds nothing either.
    replay = alice_browser.get(callback_path(location), follow=True)
    assert "unknown or was already used" in replay.content.decode()
    assert not UserGrantRecord.objects.exists() and not PendingAuthorization.objects.exists()


def test_a_users_state_is_refused_at_the_admins_callback(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    admin = operator()
    started = admin.get(reverse("nr_llm_connect", args=[server.identifier]))
    location = oauth_peers.auth.approve(started["Location"])
    path = callback_path(location).replace(
        reverse("nr_llm_connect_callback"), reverse("admin:nr_llm_oauth_callback")
    )
    admin.get(path)
    assert not UserGrantRecord.objects.exists()
    assert not OAuthGrantRecord.objects.filter(server=server).exclude(access_token_ciphertext="").exists()


def test_disconnect_revokes_and_deletes_only_that_users_grant(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    alice, alice_browser = _site_user("alice")
    bob, bob_browser = _site_user("bob")
    _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)
    _connect(oauth_peers, bob_browser, server, "member")
    old = DatabaseGrantStore(alice.pk).load(server.identifier)
    assert old is not None
    alice_browser.post(reverse("nr_llm_disconnect", args=[server.identifier]))
    assert not UserGrantRecord.objects.filter(user=alice).exists()
    assert mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=old.access_token).status_code == 401
    assert _whoami(server, bob)["subject"] == "member"
    assert isinstance(resolve(server, alice), NeedsAuthorization)


def test_deleting_a_user_deletes_their_grants(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    alice, alice_browser = _site_user("alice")
    _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)
    assert UserGrantRecord.objects.filter(user=alice).exists()
    alice.delete()
    assert not UserGrantRecord.objects.exists()


def test_an_operator_revokes_a_users_grant_in_the_admin(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    alice, alice_browser = _site_user("alice")
    _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)
    record = UserGrantRecord.objects.get(user=alice)
    post_action(operator(), reverse("admin:nr_llm_usergrantrecord_changelist"), "revoke_action", [record])
    assert not UserGrantRecord.objects.exists()


def test_a_grant_needing_reconnect_is_not_used(oauth_peers: OAuthPeers) -> None:
    server = _per_user(oauth_peers)
    alice, alice_browser = _site_user("alice")
    _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)
    DatabaseGrantStore(alice.pk).mark_attention(server.identifier, "refresh_refused", ())
    answer = resolve(server, alice)
    assert isinstance(answer, NeedsAuthorization) and answer.reason == "reconnect"
    page = alice_browser.get(reverse("nr_llm_connected_accounts")).content.decode()
    assert "needs reconnecting" in page


class _Recording:
    """The site's real client, noting each call it is asked to send."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def call_tool(self, endpoint: Endpoint, name: str, arguments: Any = None, **options: Any) -> Any:
        self.sent.append(name)
        return mcp_client().call_tool(endpoint, name, arguments, **options)


def test_execute_acts_as_its_actor_and_tells_one_without_a_grant_where_to_connect(
    oauth_peers: OAuthPeers,
) -> None:
    """tools.execute on a per-user server: Alice's call runs with her grant (whoami names her);
    Bob, never connected, is not contacted: status needs_authorization, the connect URL, a ledger
    row saying so, and one sentence for the model; disconnected later, Alice is refused too."""
    from nr_llm import tools
    from nr_llm.models import ToolCall
    from tests.factories import McpToolFactory

    server = _per_user(oauth_peers)
    McpToolFactory.create(
        server=server, remote_name="whoami", enabled=True, input_schema={"type": "object", "properties": {}}
    )
    name = f"mcp_{server.identifier}_whoami"
    alice, alice_browser = _site_user("alice")
    bob, _ = _site_user("bob")
    _connect(oauth_peers, alice_browser, server, oauth_peers.auth.username)

    client = _Recording()
    ran = tools.execute(name, {}, actor=alice, client=client)
    assert (ran.is_error, ran.status) == (False, "succeeded"), ran.text
    assert oauth_peers.auth.username in ran.text
    assert client.sent == ["whoami"]

    refused = tools.execute(name, {}, actor=bob, client=client)
    connect = PUBLIC_BASE_URL + reverse("nr_llm_connect", args=[server.identifier])
    assert (refused.is_error, refused.status, refused.connect_url) == (True, "needs_authorization", connect)
    assert connect in refused.text and "not run" in refused.text
    assert client.sent == ["whoami"]  # Bob's call was never handed to the client
    assert refused.call_id is not None
    row = ToolCall.objects.get(pk=refused.call_id)
    assert (row.status, row.error_kind, row.actor_user_id) == ("failed", "needs_authorization", bob.pk)
    [message] = tools.tool_messages("openai", [("call_1", refused)])
    assert connect in message["content"]

    alice_browser.post(reverse("nr_llm_disconnect", args=[server.identifier]))
    after = tools.execute(name, {}, actor=alice, client=client)
    assert after.status == "needs_authorization" and client.sent == ["whoami"]
