"""The credential field is write-only: set, replace, clear; never rendered back."""

import pytest
from django.urls import reverse

from nr_llm.models import McpServer

from .factories import McpServerFactory

pytestmark = pytest.mark.django_db
SECRET = "tok-ABCDEF-not-for-html-123"


def _form_data(server: McpServer, **overrides: object) -> dict[str, object]:
    data: dict[str, object] = {
        "identifier": server.identifier,
        "name": server.name,
        "description": server.description,
        "url": server.url,
        "enabled": "on" if server.enabled else "",
        "data_class": server.data_class,
        "requires_approval": "on",
        "operation_timeout": "",
        "auth_placement": "bearer",
        "auth_header_name": "",
        "credential_env": "",
        "new_credential": "",
        "tools-TOTAL_FORMS": "0",
        "tools-INITIAL_FORMS": "0",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value != ""}


def test_set_replace_and_clear_through_the_change_form(admin_client):
    """An operator sets, replaces and clears the credential; the page shows only set / not set."""
    server = McpServerFactory.create()
    url = reverse("admin:nr_llm_mcpserver_change", args=[server.pk])

    response = admin_client.post(url, _form_data(server, new_credential=SECRET))
    assert response.status_code == 302, response.content
    server.refresh_from_db()
    assert server.resolve_credential() == SECRET
    assert SECRET not in server.credential_ciphertext

    page = admin_client.get(url).content.decode()
    assert SECRET not in page
    assert server.credential_ciphertext not in page
    assert "set" in page

    admin_client.post(url, _form_data(server, new_credential="replacement-token-999"))
    server.refresh_from_db()
    assert server.resolve_credential() == "replacement-token-999"

    admin_client.post(url, _form_data(server, clear_credential="on", auth_placement="none"))
    server.refresh_from_db()
    assert server.has_credential is False
    assert "not set" in admin_client.get(url).content.decode()


def test_empty_field_keeps_the_stored_credential(admin_client):
    """Saving the form without typing a credential leaves the stored one in place."""
    server = McpServerFactory.create(auth_placement="bearer")
    server.set_credential(SECRET)
    server.save()
    url = reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
    admin_client.post(url, _form_data(server, name="Renamed"))
    server.refresh_from_db()
    assert server.name == "Renamed"
    assert server.resolve_credential() == SECRET


def test_secret_is_not_echoed_when_the_form_is_redisplayed_with_errors(admin_client):
    """A form re-rendered after a validation error does not carry the typed secret back."""
    server = McpServerFactory.create()
    url = reverse("admin:nr_llm_mcpserver_change", args=[server.pk])
    response = admin_client.post(url, _form_data(server, new_credential=SECRET, url="ftp://nope"))
    assert response.status_code == 200
    assert "Enter an http:// or https:// URL." in response.content.decode()
    assert SECRET not in response.content.decode()
    server.refresh_from_db()
    assert server.has_credential is False


def test_changelist_never_renders_the_secret(admin_client):
    """The changelist and the change form's source hold no trace of the secret or its token."""
    server = McpServerFactory.create(auth_placement="bearer")
    server.set_credential(SECRET)
    server.save()
    for url in (
        reverse("admin:nr_llm_mcpserver_changelist"),
        reverse("admin:nr_llm_mcpserver_change", args=[server.pk]),
    ):
        page = admin_client.get(url).content.decode()
        assert SECRET not in page
        assert server.credential_ciphertext not in page
