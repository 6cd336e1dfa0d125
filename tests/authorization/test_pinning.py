"""What a grant and a pre-registered client are pinned to, on the Django side: the issuer field, a
URL edit setting the grant aside, Connect following the server's challenge, and Disconnect
revoking only at the pinned issuer. Scripted parties on 127.0.0.1 count what they get."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.urls import reverse

from nr_llm import tools
from nr_llm.authorization import columns, service
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.mcp.oauth import ClientRegistration, Grant
from nr_llm.models import McpServer, McpTool, OAuthGrantRecord
from nr_llm.servers import credentials
from tests.authorization.helpers import SETTINGS, operator, pending_secrets, stored_record
from tests.oauth_scripted import Peer, authorization_server, peer, protected_resource

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("settings_for_oauth")]


@pytest.fixture
def settings_for_oauth() -> object:
    with override_settings(**SETTINGS):
        yield


def _server(url: str, **fields: Any) -> McpServer:
    values: dict[str, Any] = {
        "identifier": "pinned",
        "name": "Pinned",
        "url": url,
        "auth_placement": "oauth",
        "enabled": True,
        "data_class": "publicContent",
        # Calls run at once here; the approval step has its own tests (tests/governance).
        "requires_approval": False,
        **fields,
    }
    return McpServer.objects.create(**values)


def _stored_grant(auth: Peer, server: McpServer) -> None:
    """A grant from ``auth`` for the server's current URL, valid for an hour."""
    DatabaseGrantStore().save(
        server.identifier,
        Grant(
            access_token="AT0",
            refresh_token="rt0",
            issuer=auth.origin,
            token_endpoint=auth.url("/token"),
            resource=server.url,
            client=ClientRegistration(auth.origin, "cid"),
            expires_at=time.time() + 3600,
            mcp_url=server.url,
        ),
    )


def _state(server: McpServer) -> columns.AuthorizationState:
    server.refresh_from_db()
    return columns.state(server, stored_record(server), datetime.now(UTC))


def _form(**fields: str) -> dict[str, str]:
    return {
        "identifier": "pinned",
        "name": "Pinned",
        "url": "https://mcp.example/mcp",
        "auth_placement": "oauth",
        "oauth_grant_type": "client_credentials",
        "oauth_registration": "preregistered",
        "oauth_client_id": "svc",
        "new_oauth_client_secret": "typed-secret-123",
        "data_class": "publicContent",
        **fields,
    }


def test_a_pre_registered_client_needs_its_issuer_in_the_form() -> None:
    """The change form refuses a pre-registered client without its authorization server (issuer),
    or with one that is not a plain URL; with it, the row is saved and the issuer used."""
    client = operator()
    add = reverse("admin:nr_llm_mcpserver_add")
    missing = client.post(add, _form()).content.decode()
    assert "needs the authorization server (issuer) it is registered at" in missing
    assert (
        "no query or fragment"
        in client.post(add, _form(oauth_issuer="https://as.example/?x=1")).content.decode()
    )
    assert not McpServer.objects.exists()
    client.post(add, _form(oauth_issuer="https://as.example"))
    server = McpServer.objects.get()
    assert service.client_config(server, with_redirect=False).issuer == "https://as.example"


def test_a_pre_registered_row_without_its_issuer_says_so_and_sends_nothing() -> None:
    """A row from before the field (no grant to take the issuer from): the admin says "needs
    configuration", the filter lists it, and a tool call answers "unavailable" with nothing sent."""
    with peer() as mcp:
        server = _server(
            mcp.url("/mcp"), oauth_grant_type="client_credentials", oauth_registration="preregistered"
        )
        McpServer.objects.filter(pk=server.pk).update(
            oauth_client_id="svc", oauth_client_secret_ciphertext=credentials.encrypt("S3CRET")
        )
        McpTool.objects.create(server=server, tool_name="pinned_echo", remote_name="echo", enabled=True)
        shown = _state(server)
        assert shown.attention and shown.text.startswith(
            "needs configuration: enter the authorization server"
        )
        assert McpServer.objects.filter(columns.needs_attention()).get() == server
        result = tools.execute("pinned_echo", {})
        assert result.is_error and "is unavailable" in result.text and "issuer" in result.text
        assert mcp.requests() == []


def test_an_edited_url_sets_the_grant_aside_and_the_new_url_hears_nothing() -> None:
    """After Connect the operator edits the URL: the page says "needs reconnect: the URL changed"
    at once, the filter lists it, a tool call is "unavailable" and the new URL receives nothing."""
    with peer() as auth, peer() as old, peer() as new:
        issued = authorization_server(auth)
        server = _server(old.url("/mcp"))
        _stored_grant(auth, server)
        McpTool.objects.create(server=server, tool_name="pinned_echo", remote_name="echo", enabled=True)
        assert not _state(server).attention
        McpServer.objects.filter(pk=server.pk).update(url=new.url("/mcp"))
        assert _state(server).text == "needs reconnect: the URL changed"
        assert McpServer.objects.filter(columns.needs_attention()).get() == server
        result = tools.execute("pinned_echo", {})
        assert result.is_error and "is unavailable: the URL changed" in result.text
        assert OAuthGrantRecord.objects.get(server=server).attention_reason == "url_changed"
        assert new.requests() == [] and old.requests() == [] and issued.forms == []


def _mcp_with_challenge_only(mcp: Peer, auth: Peer) -> str:
    """An MCP endpoint whose 401 names its protected resource metadata, published nowhere else."""
    metadata = protected_resource(mcp, "/custom/prm", mcp.url("/mcp"), [auth.origin])
    challenge = f'Bearer error="invalid_token", resource_metadata="{metadata}"'
    mcp.route("POST", "/mcp", (401, {"WWW-Authenticate": challenge}, {"error": "invalid_token"}))
    return metadata


def test_connect_follows_the_challenge_s_metadata_and_keeps_it_with_the_grant() -> None:
    """Connect asks the MCP server first: its challenge names the metadata (not at any well-known
    place), so the browser goes to that authorization server (it went to the MCP origin's
    /authorize), and the grant keeps the metadata URL and the URL it was issued for."""
    with peer() as auth, peer() as mcp:
        issued = authorization_server(auth, authorization_response_iss_parameter_supported=True)
        metadata = _mcp_with_challenge_only(mcp, auth)
        server = _server(mcp.url("/mcp"))
        staff = User.objects.create_superuser("root", password="pw")
        location = service.start_connect(server, staff)
        assert location.startswith(auth.url("/authorize") + "?"), location
        assert parse_qs(urlsplit(location).query)["resource"] == [mcp.url("/mcp")]
        state, _ = pending_secrets()
        connected = service.finish_connect(staff, {"state": state, "code": "c-1", "iss": auth.origin})
        assert connected.server == server
    record = OAuthGrantRecord.objects.get(server=server)
    assert (record.resource_metadata, record.mcp_url) == (metadata, server.url)
    assert [form["grant_type"] for form in issued.forms] == ["authorization_code"]


def test_disconnect_revokes_only_at_the_pinned_issuer() -> None:
    """The metadata at the pinned issuer names another issuer and a revocation endpoint elsewhere:
    nothing is sent there, the tokens are still forgotten, and the message says why."""
    with peer() as auth, peer() as capture:
        capture.route("POST", "/revoke", (200, {}, {}))
        authorization_server(auth, issuer="http://127.0.0.1:1", revocation_endpoint=capture.url("/revoke"))
        server = _server("http://127.0.0.1:9/mcp")
        _stored_grant(auth, server)
        done = service.disconnect(server)
    assert not done.revoked and "names another issuer" in done.note
    assert capture.requests() == []
    assert DatabaseGrantStore().load("pinned") is None
