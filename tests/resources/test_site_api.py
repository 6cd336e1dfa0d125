"""The site API for resources and prompts (nr_llm.resources, nr_llm.prompts) against the
official SDK 2.3 server: only enabled rows within the ceiling, templates and tool links
followed, every read and get in the ledger, prompts in the providers' published types."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Iterator

import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputItemParam

from nr_llm import prompts, resources
from nr_llm.catalogue import enable_features, import_catalogue
from nr_llm.governance import ledger
from nr_llm.mcp import Endpoint
from nr_llm.models import McpFeature, McpServer, ToolCall
from nr_llm.servers.endpoints import endpoint_for, mcp_client
from tests import catalogue_peers
from tests.peers import running
from tests.provider_types import assert_conforms

from ..factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

# transaction=True: the ledger writes on a connection of its own.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]


@pytest.fixture(scope="module")
def features_url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.features_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def server(features_url: str) -> McpServer:
    """An enabled server (editorContent) with everything imported and enabled but docs://logo."""
    server = McpServerFactory.create(
        identifier="feat", url=features_url, enabled=True, requires_approval=False, data_class="editorContent"
    )
    assert import_catalogue(server).ok
    enable_features(
        McpFeature.objects.filter(server=server).exclude(key="docs://logo").values_list("pk", flat=True)
    )
    return server


def _rows(prefix: str) -> list[ToolCall]:
    return list(ToolCall.objects.filter(tool_name__startswith=prefix).order_by("created"))


def test_available_lists_the_enabled_resources_and_templates(server: McpServer) -> None:
    listed = resources.available()
    assert [(r.uri, r.uri_template, r.server) for r in listed] == [
        ("docs://big", "", "feat"),
        ("docs://readme", "", "feat"),
        ("", "notes://{topic}/page", "feat"),
    ]
    assert resources.available(data_class_ceiling="publicContent") == []


def test_a_listed_resource_and_a_templated_uri_are_read_and_recorded(server: McpServer) -> None:
    readme = resources.read("docs://readme", server="feat", actor="test")
    assert (readme.status, readme.is_error, readme.server) == ("succeeded", False, "feat")
    assert readme.text.endswith("The readme.")
    note = resources.read("notes://rust/page", server="feat", actor="test")
    assert note.text == "[resource notes://rust/page]\nnote about rust"
    rows = _rows("resources/read")
    assert [(row.tool_name, row.status, row.actor_label) for row in rows] == [
        ("resources/read feat docs://readme", "succeeded", "test"),
        # Named by the template: the URI filled from a caller's input is in the encrypted arguments.
        ("resources/read feat notes://{topic}/page", "succeeded", "test"),
    ]
    assert all(row.duration_ms is not None for row in rows)


def test_what_is_not_enabled_or_escapes_a_template_is_refused_unsent(server: McpServer) -> None:
    """docs://logo is not enabled; ../ climbs out of the template; a higher data class than the
    ceiling: each refused with a reason and a ledger row, the server never asked."""
    for uri in ("docs://logo", "notes://../secret/page", "notes://a/b/page"):
        result = resources.read(uri, server="feat")
        assert (result.status, result.is_error) == ("refused", True), uri
    over = resources.read("docs://readme", server="feat", data_class_ceiling="publicContent")
    assert over.status == "refused" and "it was not contacted" in over.text
    assert [row.status for row in _rows("resources/read")] == ["failed"] * 4
    # What a caller built is never in the clear: refused rows are not named by their URI.
    assert {row.tool_name for row in _rows("resources/read")} == {"resources/read feat (refused)"}
    escaped = next(row for row in _rows("resources/read") if "secret" in str(ledger.arguments_of(row)))
    assert ledger.arguments_of(escaped) == {"uri": "notes://../secret/page"}
    clear = [
        getattr(escaped, f.attname) for f in ToolCall._meta.concrete_fields if "ciphertext" not in f.name
    ]
    assert not [value for value in clear if "../secret" in str(value)]


def test_a_big_resource_fails_with_the_cap_named_and_nothing_raised(server: McpServer) -> None:
    result = resources.read("docs://big", server="feat")
    assert (result.status, result.is_error) == ("failed", True)
    assert "2 MiB" in result.text


def test_a_link_a_tool_returned_is_readable_from_its_server(server: McpServer) -> None:
    McpFeature.objects.filter(server=server).update(enabled=False)
    outcome = mcp_client().call_tool(resources_endpoint(server), "linked")
    link = next(block for block in outcome.content if block["type"] == "resource_link")
    assert resources.read(link["uri"], server="feat").status == "refused"
    assert resources.remember_links("feat", outcome.content) == 1
    assert resources.read(link["uri"], server="feat").text.endswith("The readme.")


def resources_endpoint(server: McpServer) -> Endpoint:
    return endpoint_for(server)


@pytest.mark.parametrize(
    ("provider", "published"),
    [
        ("openai", ChatCompletionMessageParam),
        ("openai-responses", ResponseInputItemParam),
        ("anthropic", MessageParam),
    ],
)
def test_prompts_come_in_the_providers_published_shapes(
    server: McpServer, provider: str, published: object
) -> None:
    greet = prompts.get("greet", {"name": "Ann"}, provider=provider, actor="test")  # type: ignore[arg-type]
    look = prompts.get("look", provider=provider)  # type: ignore[arg-type]
    assert not greet.is_error and not look.is_error
    assert len(greet.messages) == 2 and len(look.messages) == 2
    for message in greet.messages + look.messages:
        assert_conforms(published, message)
    assert "Say hello to Ann in a plain way." in str(greet.messages[0])
    assert "a note" in str(look.messages[1]) and "file:///srv/notes/a.txt" in str(look.messages[1])


def test_a_missing_required_argument_is_named(server: McpServer) -> None:
    result = prompts.get("greet")
    assert (result.status, result.is_error) == ("refused", True)
    assert "needs the argument(s) 'name'" in result.text
    assert [row.status for row in _rows("prompts/get")] == ["failed"]


def test_prompts_available_and_completion(server: McpServer) -> None:
    listed = {prompt.name: prompt for prompt in prompts.available()}
    assert set(listed) == {"greet", "look"}
    assert [(a.name, a.required) for a in listed["greet"].arguments] == [("name", True), ("style", False)]
    completed = prompts.complete("greet", "style", "p")
    assert (completed.values, completed.status) == (("plain", "pirate", "poem"), "succeeded")


def test_the_async_twins_have_the_same_parameters_and_answer_alike(server: McpServer) -> None:
    for module, pairs in ((resources, ("available", "read")), (prompts, ("available", "get", "complete"))):
        for name in pairs:
            sync, twin = getattr(module, name), getattr(module, f"a{name}")
            assert list(inspect.signature(sync).parameters) == list(inspect.signature(twin).parameters)
    result = asyncio.run(resources.aread("docs://readme", server="feat"))
    assert result.text.endswith("The readme.")
    got = asyncio.run(prompts.aget("greet", {"name": "Bo"}, provider="anthropic"))
    assert got.messages[0]["content"][0]["text"] == "Say hello to Bo in a plain way."
