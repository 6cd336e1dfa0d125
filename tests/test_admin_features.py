"""The admin of resources, templates and prompts: listed per server with import counts, enabled
by action, tried (a resource read, a template filled, a prompt filled) against the official SDK
2.3 server, a changed definition accepted from its page, a dangerous URI never an href."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.urls import reverse

from nr_llm.catalogue import enable_features, import_catalogue
from nr_llm.catalogue.links import safe_href
from nr_llm.models import DEFINITION_CHANGED, McpFeature, McpServer, ToolCall
from tests import catalogue_peers
from tests.peers import running

from .factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture(scope="module")
def features_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.features_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def server(features_url: str) -> McpServer:
    server = McpServerFactory.create(
        identifier="feat", url=features_url, enabled=True, requires_approval=False
    )
    assert import_catalogue(server).ok
    return server


def _try(admin_client, key: str, values: str = "{}") -> str:
    feature = McpFeature.objects.get(key=key)
    url = reverse("admin:nr_llm_mcpfeature_try", args=[feature.pk])
    return admin_client.post(url, {"values": values}).content.decode()  # type: ignore[no-any-return]


@pytest.mark.e2e
def test_the_server_page_counts_and_the_list_shows_them_per_server(admin_client, server) -> None:
    page = admin_client.get(reverse("admin:nr_llm_mcpserver_change", args=[server.pk])).content.decode()
    assert "3 resources, 1 templates, 2 prompts</a> (0 enabled)" in page
    listing = admin_client.get(
        reverse("admin:nr_llm_mcpfeature_changelist") + f"?server__id__exact={server.pk}"
    )
    text = listing.content.decode()
    assert "docs://readme" in text and "notes://{topic}/page" in text and "greet" in text


@pytest.mark.e2e
def test_enable_by_action_then_try_each_kind(admin_client, server) -> None:
    ids = list(McpFeature.objects.values_list("pk", flat=True))
    admin_client.post(
        reverse("admin:nr_llm_mcpfeature_changelist"), {"action": "enable_selected", "_selected_action": ids}
    )
    assert McpFeature.objects.filter(enabled=True).count() == len(ids)
    assert "The readme." in _try(admin_client, "docs://readme")
    assert "note about rust" in _try(admin_client, "notes://{topic}/page", '{"topic": "rust"}')
    escaped = _try(admin_client, "notes://{topic}/page", '{"topic": ".."}')
    assert "Not read (refused)" in escaped and "climbs out" in escaped
    prompt = _try(admin_client, "greet", '{"name": "Ann"}')
    assert "Say hello to Ann in a plain way." in prompt
    missing = _try(admin_client, "greet")
    assert "needs the argument(s) &#x27;name&#x27;" in missing
    assert ToolCall.objects.filter(tool_name__startswith="resources/read feat").count() == 2


def test_a_changed_definition_is_accepted_from_its_page(admin_client) -> None:
    server = McpServerFactory.create(identifier="feat")
    feature = McpFeature.objects.create(
        server=server,
        kind="resource",
        key="docs://a",
        key_digest="x",
        definition={"uri": "docs://a"},
        definition_fingerprint="new",
        pinned_fingerprint="old",
        disabled_reason=DEFINITION_CHANGED,
    )
    assert enable_features([feature.pk]) == 0
    url = reverse("admin:nr_llm_mcpfeature_accept", args=[feature.pk])
    admin_client.post(url, {"reviewed": "new"})
    feature.refresh_from_db()
    assert feature.enabled and feature.pinned_fingerprint == "new"


@pytest.mark.parametrize(
    "uri", ["javascript:alert(1)", " Java\tScript:alert(1)", "data:text/html,<b>", "VBScript:x"]
)
def test_a_dangerous_scheme_is_never_an_href(admin_client, uri: str) -> None:
    assert safe_href(uri) == ""
    server = McpServerFactory.create(identifier="feat")
    feature = McpFeature.objects.create(server=server, kind="resource", key=uri, key_digest="y")
    page = admin_client.get(reverse("admin:nr_llm_mcpfeature_try", args=[feature.pk])).content.decode()
    assert 'id="try-feature-key" href' not in page and '<span id="try-feature-key">' in page
    assert safe_href("file:///srv/a.txt") == "file:///srv/a.txt"
