"""Resources, resource templates and prompts imported beside the tools, governed as tools are:
disabled on arrival, enabled one by one, a changed definition disabled until reviewed, a
vanished one orphaned. Against the official SDK 2.3 server and a double for the re-imports."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.catalogue import accept_feature_definition, disable_features, enable_features, import_catalogue
from nr_llm.management.commands.mcp_import import Command
from nr_llm.mcp.protocol.client import Features
from nr_llm.models import DEFINITION_CHANGED, McpFeature
from tests import catalogue_peers
from tests.peers import running

from ..factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


class Double:
    """Lists the given tools and features; what a re-import sees."""

    def __init__(self, resources: list[dict[str, Any]], prompts: list[dict[str, Any]] | None = None) -> None:
        self.features = Features(resources, [], prompts or [])

    def list_tools(self, endpoint: Any, on_page: Any = None) -> list[dict[str, Any]]:
        return []

    def list_features(self, endpoint: Any) -> Features:
        return self.features


@pytest.fixture(scope="module")
def features_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.features_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.e2e
def test_an_import_brings_resources_templates_and_prompts_disabled(features_url: str) -> None:
    server = McpServerFactory.create(identifier="feat", url=features_url)
    report = import_catalogue(server)
    assert report.ok and report.imported == 4  # linked, book, verify, reserve
    assert (report.features["resources"], report.features["templates"], report.features["prompts"]) == (
        3,
        1,
        2,
    )
    rows = McpFeature.objects.filter(server=server)
    assert sorted(rows.values_list("kind", "key")) == [
        ("prompt", "greet"),
        ("prompt", "look"),
        ("resource", "docs://big"),
        ("resource", "docs://logo"),
        ("resource", "docs://readme"),
        ("template", "notes://{topic}/page"),
    ]
    assert not rows.filter(enabled=True).exists()
    readme = rows.get(key="docs://readme")
    assert (readme.name, readme.mime_type, readme.description) == ("readme", "text/markdown", "The readme")


def test_a_changed_definition_disables_an_enabled_row_until_reviewed() -> None:
    server = McpServerFactory.create(identifier="feat", url="https://feat.example/mcp")
    first = Double([{"uri": "docs://a", "name": "a", "description": "one"}], [{"name": "p"}])
    import_catalogue(server, client=first)
    rows = list(McpFeature.objects.filter(server=server).order_by("key"))
    assert enable_features([row.pk for row in rows]) == 2
    changed = Double([{"uri": "docs://a", "name": "a", "description": "two"}], [{"name": "p"}])
    report = import_catalogue(server, client=changed)
    assert report.features["changed"] == ["docs://a"]
    resource = McpFeature.objects.get(server=server, key="docs://a")
    assert (resource.enabled, resource.disabled_reason) == (False, DEFINITION_CHANGED)
    # Enabling by selection leaves it for review; reading the change and accepting enables it.
    assert enable_features([resource.pk]) == 0
    assert (
        accept_feature_definition(resource.pk, "stale")
        == "its definition changed again while you read it; read it again"
    )
    assert accept_feature_definition(resource.pk, resource.definition_fingerprint) == ""
    resource.refresh_from_db()
    assert resource.offered and resource.pinned_definition["description"] == "two"
    assert McpFeature.objects.get(server=server, key="p").offered


def test_a_vanished_item_is_orphaned_never_deleted_and_a_bad_one_skipped() -> None:
    server = McpServerFactory.create(identifier="feat", url="https://feat.example/mcp")
    import_catalogue(server, client=Double([{"uri": "docs://a"}, {"uri": "docs://b"}]))
    report = import_catalogue(
        server, client=Double([{"uri": "docs://a"}, {"name": "no uri"}, {"uri": "x" * 3000}])
    )
    assert (report.features["orphaned"], report.features["skipped"]) == (1, 2)
    assert "a resource without a uri was skipped" in report.features["skip_reasons"]
    assert McpFeature.objects.get(key="docs://b").orphaned
    assert disable_features(McpFeature.objects.values_list("pk", flat=True)) == 0


@pytest.mark.e2e
def test_server_everythings_catalogue_is_imported() -> None:
    from tests.mcp.protocol.test_features_peers import EVERYTHING, PEERS_DIR

    with running(["node", "-r", str(PEERS_DIR / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]) as port:
        server = McpServerFactory.create(identifier="everything", url=f"http://127.0.0.1:{port}/mcp")
        report = import_catalogue(server)
    assert report.ok and report.imported >= 10
    assert report.features["resources"] >= 7 and report.features["templates"] == 2
    assert report.features["prompts"] >= 4


def test_the_import_command_prints_the_counts() -> None:
    """mcp_import's line under the tools' one: what the walk brought beside them."""
    server = McpServerFactory.create(identifier="feat", url="https://feat.example/mcp")
    report = import_catalogue(server, client=Double([{"uri": "docs://a"}], [{"name": "p"}]))
    out = io.StringIO()
    Command(stdout=out)._print(report)
    assert "  1 resources, 0 resource templates, 1 prompts imported (0 skipped, 0 orphaned)" in out.getvalue()
