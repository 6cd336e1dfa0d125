"""Connect → the authorization server's login and consent → callback → "Connected", over HTTP.

The authorization server is django-oauth-toolkit and the MCP server the SDK's, both real
(tests/peers/README.md); the operator's browser is the Django test client on our side and
``auth.approve`` (a requests session filling in the real login and consent forms) on theirs.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from django.test import override_settings
from django.urls import reverse

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.models import PendingAuthorization
from tests.admin_clients import messages_of
from tests.authorization.helpers import (
    SETTINGS,
    callback_path,
    nothing_stored,
    oauth_server,
    operator,
    pending_secrets,
    press_connect,
    stored_record,
)
from tests.oauth_peers import OAuthPeers, mcp_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("settings_for_oauth")]


@pytest.fixture
def settings_for_oauth() -> object:
    with override_settings(**SETTINGS):
        yield


def test_connect_redirects_to_the_authorization_server_and_the_callback_stores_a_working_grant(
    oauth_peers: OAuthPeers, caplog: pytest.LogCaptureFixture
) -> None:
    """Dynamic registration, PKCE and state end in "Connected: scopes …, expires …" and a token
    the protected MCP server accepts; no secret shows up in logs, pages, history or redirects."""
    caplog.set_level(logging.DEBUG)
    server = oauth_server(oauth_peers)
    client = operator()
    started = press_connect(client, server)
    assert started.status_code == 302
    assert started["Location"].startswith(oauth_peers.auth.authorization_endpoint)
    state, verifier = pending_secrets()
    our_logs = caplog.text
    # The operator's browser at the authorization server is the test's, and so are its logs
    # (urllib3 logs the authorization URL with its state): only this site's are scanned.
    location = oauth_peers.auth.approve(started["Location"])
    caplog.clear()
    code = parse_qs(urlsplit(location).query)["code"][0]

    landed = client.get(callback_path(location))
    assert landed.status_code == 302
    assert landed["Location"] == reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
    page = client.get(landed["Location"])
    [(level, text)] = messages_of(page)
    assert level == "success"
    assert text.startswith("Connected protected: scopes mcp:tools")
    assert "expires 20" in text and text.endswith(" UTC.")

    grant = DatabaseGrantStore().load("protected")
    assert grant is not None and grant.refresh_token
    assert grant.issuer == oauth_peers.auth.issuer and grant.resource == oauth_peers.mcp.url
    listed = mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token)
    assert listed.status_code == 200, listed.text
    assert PendingAuthorization.objects.count() == 0

    record = stored_record(server)
    assert record is not None
    secrets = [grant.access_token, grant.refresh_token, code, state, verifier]
    secrets += [s for s in (grant.client.client_secret,) if s]
    pages = [
        page.content.decode(),
        client.get(reverse("admin:nr_llm_mcpserver_changelist")).content.decode(),
        client.get(reverse("admin:nr_llm_mcpserver_history", args=[server.pk])).content.decode(),
        landed["Location"],
        repr(record),
        repr(grant),
        our_logs + caplog.text,
    ]
    for secret in secrets:
        for shown in pages:
            assert secret not in shown
        for column in (
            record.access_token_ciphertext,
            record.refresh_token_ciphertext,
            record.registration_ciphertext,
        ):
            assert secret not in column
    assert "connected until" in pages[1]


def test_disconnect_revokes_the_grant_and_forgets_it(oauth_peers: OAuthPeers) -> None:
    """Disconnect revokes at the advertised revocation endpoint: the old token stops working."""
    server = oauth_server(oauth_peers)
    client = operator()
    location = oauth_peers.auth.approve(press_connect(client, server)["Location"])
    client.get(callback_path(location))
    grant = DatabaseGrantStore().load("protected")
    assert grant is not None
    revocations = len(oauth_peers.auth.requests_seen("revoke"))

    answer = client.post(reverse("admin:nr_llm_mcpserver_oauth_disconnect", args=[server.pk]), follow=True)
    assert ("success", "Disconnected protected: tokens revoked and forgotten.") in messages_of(answer)
    assert nothing_stored(server)
    assert len(oauth_peers.auth.requests_seen("revoke")) == revocations + 2
    refused = mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token)
    assert refused.status_code == 401


def test_connect_and_disconnect_refuse_a_get(oauth_peers: OAuthPeers) -> None:
    """A link cannot start or end an authorization: both need the admin's CSRF-checked POST."""
    server = oauth_server(oauth_peers)
    client = operator()
    for name in ("admin:nr_llm_mcpserver_oauth_connect", "admin:nr_llm_mcpserver_oauth_disconnect"):
        assert client.get(reverse(name, args=[server.pk])).status_code == 405
    assert PendingAuthorization.objects.count() == 0


def _with_query(location: str, **changes: str | None) -> str:
    parts = urlsplit(location)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        ({"state": "not-the-state"}, "state is unknown or was already used"),
        ({"state": None}, "carried no state"),
        ({"code": None}, "carried no code"),
        ({"iss": "http://127.0.0.1:1/evil"}, "another issuer"),
        ({"iss": None}, "another issuer"),
    ],
    ids=["wrong-state", "no-state", "missing-code", "tampered-iss", "missing-iss"],
)
def test_a_bad_callback_is_a_clear_message_and_stores_nothing(
    oauth_peers: OAuthPeers, tamper: dict[str, str | None], message: str
) -> None:
    """Each tampered callback answers with an admin error naming the problem; no token is kept."""
    server = oauth_server(oauth_peers)
    client = operator()
    location = oauth_peers.auth.approve(press_connect(client, server)["Location"])
    before = oauth_peers.auth.token_requests("authorization_code")
    answer = client.get(callback_path(_with_query(location, **tamper)), follow=True)
    [(level, text)] = messages_of(answer)
    assert level == "error" and message in text, text
    assert "othing was stored" in text
    assert nothing_stored(server)
    assert oauth_peers.auth.token_requests("authorization_code") == before


def test_a_reused_state_is_refused(oauth_peers: OAuthPeers) -> None:
    """The pending authorization is single use: replaying a callback stores nothing new."""
    server = oauth_server(oauth_peers)
    client = operator()
    location = oauth_peers.auth.approve(press_connect(client, server)["Location"])
    client.get(callback_path(location), follow=True)
    first = DatabaseGrantStore().load("protected")
    assert first is not None
    answer = client.get(callback_path(location), follow=True)
    [(level, text)] = messages_of(answer)
    assert level == "error" and "already used" in text
    assert DatabaseGrantStore().load("protected") == first


def test_an_expired_state_is_refused(oauth_peers: OAuthPeers) -> None:
    """A callback later than the pending authorization's lifetime is refused, nothing stored."""
    from datetime import timedelta

    server = oauth_server(oauth_peers)
    client = operator()
    location = oauth_peers.auth.approve(press_connect(client, server)["Location"])
    row = PendingAuthorization.objects.get()
    PendingAuthorization.objects.filter(pk=row.pk).update(created=row.created - timedelta(minutes=11))
    answer = client.get(callback_path(location), follow=True)
    [(level, text)] = messages_of(answer)
    assert level == "error" and "expired" in text
    assert nothing_stored(server)


def test_another_staff_user_cannot_complete_the_authorization(oauth_peers: OAuthPeers) -> None:
    """The pending authorization is bound to the operator who pressed Connect."""
    server = oauth_server(oauth_peers)
    location = oauth_peers.auth.approve(press_connect(operator(), server)["Location"])
    answer = operator("other").get(callback_path(location), follow=True)
    [(level, text)] = messages_of(answer)
    assert level == "error" and "another user" in text
    assert nothing_stored(server)


def test_an_authorization_server_error_is_shown_and_nothing_stored(oauth_peers: OAuthPeers) -> None:
    """The user pressing Cancel at the consent page comes back as "refused … access_denied"."""
    server = oauth_server(oauth_peers)
    client = operator()
    location = oauth_peers.auth.approve(press_connect(client, server)["Location"], allow=False)
    answer = client.get(callback_path(location), follow=True)
    [(level, text)] = messages_of(answer)
    assert level == "error" and "refused to connect protected: access_denied" in text
    assert nothing_stored(server)


def test_the_callback_needs_a_staff_login(oauth_peers: OAuthPeers) -> None:
    """Anonymous: the admin's login page, and the pending authorization is untouched."""
    from django.test import Client

    server = oauth_server(oauth_peers)
    location = oauth_peers.auth.approve(press_connect(operator(), server)["Location"])
    answer = Client().get(callback_path(location))
    assert answer.status_code == 302 and "/login/" in answer["Location"]
    assert PendingAuthorization.objects.count() == 1
    assert nothing_stored(server)
