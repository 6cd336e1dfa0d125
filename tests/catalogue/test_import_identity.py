"""A per-user server's catalogue import acts as the one user its operator names
(``catalogue_user``, catalogue/identity.py): with that user's own grant on the real peers
(django-oauth-toolkit and the SDK's protected MCP server), and refused with a reason saying what
to do, the server not contacted, when no user is named or that user has no grant."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse

from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.identity import NoImportGrant, import_identity
from nr_llm.mcp.oauth import OAuthSettings
from nr_llm.models import ImportStatus, McpServer, McpTool
from tests.authorization.helpers import SETTINGS, callback_path, oauth_server
from tests.factories import McpServerFactory
from tests.oauth_peers import OAuthPeers


def _per_user(**fields: object) -> McpServer:
    # Port 9 (discard): were anything sent, the import would fail with "unreachable" instead.
    return McpServerFactory.create(
        auth_placement="oauth", oauth_mode="per_user", url="http://127.0.0.1:9/mcp", **fields
    )


@pytest.mark.django_db
def test_no_user_named_refuses_the_import_saying_what_to_do() -> None:
    server = _per_user()
    report = import_catalogue(server)
    server.refresh_from_db()
    assert server.import_status == ImportStatus.ERROR
    assert "no user to import as is set" in server.import_error and "imports act as" in server.import_error
    assert report.imported == 0 and report.refused == server.import_error


@pytest.mark.django_db
@override_settings(**SETTINGS)
def test_a_named_user_without_a_grant_refuses_the_import_with_their_connect_url() -> None:
    operator = User.objects.create_user("olivia")
    server = _per_user(catalogue_user=operator)
    with pytest.raises(NoImportGrant) as caught:
        import_identity(server)
    assert "(olivia) has no usable grant" in str(caught.value)
    assert reverse("nr_llm_connect", args=[server.identifier]) in str(caught.value)
    import_catalogue(server)
    server.refresh_from_db()
    assert server.import_status == ImportStatus.ERROR and "olivia" in server.import_error


@pytest.mark.django_db(transaction=True)
@override_settings(**SETTINGS)
def test_the_import_runs_as_the_named_users_own_grant(oauth_peers: OAuthPeers) -> None:
    """The operator connects their own account through the site's Connect page, as any user does;
    the import then lists the tools with that grant (another user's grant is never used)."""
    server = oauth_server(oauth_peers, oauth_mode="per_user")
    olivia = User.objects.create_user("olivia", password="pw")
    browser = Client()
    browser.force_login(olivia)
    started = browser.get(reverse("nr_llm_connect", args=[server.identifier]))
    browser.get(callback_path(oauth_peers.auth.approve(started["Location"])))
    server.catalogue_user = olivia
    server.save()

    chosen = import_identity(server)
    assert chosen.user_id == olivia.pk
    assert isinstance(chosen.endpoint.oauth, OAuthSettings)
    assert chosen.endpoint.oauth.store.user_id == olivia.pk  # type: ignore[attr-defined]
    import_catalogue(server)
    server.refresh_from_db()
    assert server.import_status == ImportStatus.OK, server.import_error
    assert McpTool.objects.filter(server=server, remote_name="whoami").exists()
