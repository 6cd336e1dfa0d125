"""Client credentials Connect, the public base URL check, the metadata document, key rotation."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.checks import check_public_base_url
from nr_llm.models import McpServer, OAuthGrantRecord, PendingAuthorization
from nr_llm.servers import credentials
from tests.admin_clients import messages_of
from tests.authorization.helpers import SETTINGS, oauth_server, operator, press_connect
from tests.oauth_peers import OAuthPeers, mcp_request

pytestmark = pytest.mark.django_db(transaction=True)


def test_client_credentials_connect_needs_no_browser_and_shows_ok(oauth_peers: OAuthPeers) -> None:
    """Pre-registered machine client: Connect fetches a token at once; "client credentials OK"."""
    machine = oauth_peers.auth.machine_client
    assert machine.client_secret is not None
    with override_settings(**SETTINGS):
        server = oauth_server(
            oauth_peers,
            oauth_grant_type="client_credentials",
            oauth_registration="preregistered",
            oauth_issuer=oauth_peers.auth.issuer,
            oauth_client_id=machine.client_id,
            oauth_client_secret_ciphertext=credentials.encrypt(machine.client_secret),
        )
        client = operator()
        answer = client.post(reverse("admin:nr_llm_mcpserver_oauth_connect", args=[server.pk]), follow=True)
        [(level, text)] = messages_of(answer)
        assert level == "success" and text.startswith("Connected protected: scopes"), text
        changelist = client.get(reverse("admin:nr_llm_mcpserver_changelist")).content.decode()
    assert "OAuth 2.1: client credentials OK" in changelist
    assert machine.client_secret not in changelist
    grant = DatabaseGrantStore().load("protected")
    assert grant is not None and grant.grant_type == "client_credentials"
    assert mcp_request(oauth_peers.mcp.url, "tools/list", {}, token=grant.access_token).status_code == 200


def test_connect_without_a_public_base_url_says_what_to_set(oauth_peers: OAuthPeers) -> None:
    """No NR_LLM_PUBLIC_BASE_URL: Connect names the setting and sends nobody anywhere."""
    with override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True):
        server = oauth_server(oauth_peers)
        client = operator()
        answer = press_connect(client, server)
        assert answer.status_code == 302
        assert answer["Location"] == reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
        [(level, text)] = messages_of(client.get(answer["Location"]))
    assert level == "error" and "NR_LLM_PUBLIC_BASE_URL is not set" in text
    assert not PendingAuthorization.objects.exists()


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("https://example.org", True),
        ("http://127.0.0.1:8000/", True),
        ("example.org", False),
        ("https://example.org/site", False),
        ("ftp://example.org", False),
        (42, False),
    ],
)
def test_the_public_base_url_check(value: object, ok: bool) -> None:
    """Only a bare http(s) origin passes (nr_llm.E006)."""
    with override_settings(NR_LLM_PUBLIC_BASE_URL=value):
        found = check_public_base_url()
    assert (found == []) is ok
    assert all(message.id == "nr_llm.E006" for message in found)


def test_the_client_metadata_document_is_served_for_servers_that_use_one() -> None:
    """Stable URL per server; client_id is the document's own URL; other servers get a 404."""
    with override_settings(NR_LLM_PUBLIC_BASE_URL="https://site.example"):
        McpServer.objects.create(
            identifier="cimd",
            name="CIMD",
            url="https://mcp.example/mcp",
            auth_placement="oauth",
            oauth_registration="metadata_document",
        )
        McpServer.objects.create(identifier="plain", name="Plain", url="https://mcp.example/mcp")
        from django.test import Client

        document = Client().get("/nr-llm/oauth/client/cimd.json").json()
        assert Client().get("/nr-llm/oauth/client/plain.json").status_code == 404
    assert document["client_id"] == "https://site.example/nr-llm/oauth/client/cimd.json"
    assert document["redirect_uris"] == ["https://site.example/admin/nr_llm/mcpserver/oauth/callback/"]


def test_rotation_re_encrypts_oauth_secrets_and_grants() -> None:
    """mcp_rotate_credentials covers the client secret, key, tokens and registration too."""
    old_keys = ["old-key-0123456789abcdef"]
    with override_settings(NR_LLM_CREDENTIAL_KEYS=old_keys):
        server = McpServer.objects.create(
            identifier="rot",
            name="Rot",
            url="https://mcp.example/mcp",
            auth_placement="oauth",
            oauth_client_secret_ciphertext=credentials.encrypt("client-secret"),
        )
        from tests.authorization.test_store import GRANT

        DatabaseGrantStore().save("rot", GRANT)
    with override_settings(NR_LLM_CREDENTIAL_KEYS=["new-key-0123456789abcdef", *old_keys]):
        call_command("mcp_rotate_credentials", stdout=__import__("io").StringIO())
    with override_settings(NR_LLM_CREDENTIAL_KEYS=["new-key-0123456789abcdef"]):
        server.refresh_from_db()
        assert credentials.decrypt(server.oauth_client_secret_ciphertext) == "client-secret"
        assert DatabaseGrantStore().load("rot") == GRANT
        assert OAuthGrantRecord.objects.count() == 1


def test_client_secret_and_key_are_write_only_even_when_the_form_is_shown_again() -> None:
    """A change form re-rendered after an error echoes neither the typed secret nor the typed key;
    a valid save stores both encrypted and the page then says only "set"."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
        .decode()
    )
    server = McpServer.objects.create(identifier="wo", name="WO", url="https://mcp.example/mcp")
    client = operator()
    url = reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
    form = {
        "identifier": "wo",
        "name": "WO",
        "url": "https://mcp.example/mcp",
        "auth_placement": "oauth",
        "oauth_grant_type": "client_credentials",
        "oauth_registration": "preregistered",
        "oauth_issuer": "https://as.example",
        "oauth_client_id": "",  # missing: the form comes back with an error
        "new_oauth_client_secret": "typed-client-secret-123",
        "new_oauth_private_key": pem,
        "data_class": "publicContent",
    }
    again = client.post(url, form).content.decode()
    assert "pre-registered client needs its client id" in again
    assert "typed-client-secret-123" not in again
    assert "PRIVATE KEY" not in again
    saved = client.post(url, {**form, "oauth_client_id": "cid"}, follow=True).content.decode()
    server.refresh_from_db()
    assert credentials.decrypt(server.oauth_client_secret_ciphertext) == "typed-client-secret-123"
    assert credentials.decrypt(server.oauth_private_key_ciphertext) == pem.strip()
    page = client.get(url).content.decode()
    assert "client secret and private key set" in page
    for shown in (
        saved,
        page,
        client.get(reverse("admin:nr_llm_mcpserver_history", args=[server.pk])).content.decode(),
    ):
        assert "typed-client-secret-123" not in shown and "PRIVATE KEY" not in shown
