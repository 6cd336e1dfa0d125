"""Large catalogues: ``definitions(..., defer=True)`` loads tools on demand through the provider's
own tool search, in the providers' published request types, in an order stable across requests."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ToolUnionParam
from openai.types.responses import ToolParam

from nr_llm import tools
from tests.factories import McpServerFactory, McpToolFactory
from tests.provider_types import assert_conforms

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.fixture
def catalogue():
    """Two servers of three tools each, created out of order, and one local tool."""
    for identifier in ("zeta", "alpha"):
        server = McpServerFactory.create(identifier=identifier, name=identifier.title())
        for remote in ("c", "a", "b"):
            McpToolFactory.create(server=server, remote_name=remote, enabled=True, input_schema=SCHEMA)

    @tools.register("site_lookup", "The site's own lookup.", SCHEMA)
    def lookup(q: str) -> str:
        return q

    yield
    tools.unregister("site_lookup")


def _names(items: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item.get("type") == "namespace":
            out.extend(f"{item['name']}/{tool['name']}" for tool in item["tools"])
        else:
            out.append(item.get("name", item.get("type", "")))
    return out


def test_responses_defers_each_servers_tools_in_one_namespace_with_tool_search(catalogue):
    """The tools the site keeps loaded come first as plain functions, then the hosted tool_search,
    then one namespace per server holding its tools with defer_loading, each valid as published."""
    offered = tools.definitions("openai-responses", defer=True, always_loaded=["site_lookup", "mcp_zeta_a"])
    assert _names(offered) == [
        "site_lookup",
        "mcp_zeta_a",
        "tool_search",
        "alpha/mcp_alpha_a",
        "alpha/mcp_alpha_b",
        "alpha/mcp_alpha_c",
        "zeta/mcp_zeta_b",
        "zeta/mcp_zeta_c",
    ]
    assert "defer_loading" not in offered[0] and "defer_loading" not in offered[1]
    assert offered[2] == {"type": "tool_search"}
    alpha = offered[3]
    assert alpha["type"] == "namespace" and all(tool["defer_loading"] is True for tool in alpha["tools"])
    assert alpha["tools"][0]["parameters"] == SCHEMA
    for item in offered:
        assert_conforms(ToolParam, item)


def test_anthropic_defers_every_tool_not_kept_loaded_behind_the_search_tool(catalogue):
    """Anthropic: the BM25 tool search tool, and each deferred tool with defer_loading, flat."""
    offered = tools.definitions("anthropic", defer=True, always_loaded={"site_lookup"})
    assert _names(offered) == [
        "site_lookup",
        "tool_search_tool_bm25",
        *(f"mcp_{server}_{remote}" for server in ("alpha", "zeta") for remote in "abc"),
    ]
    assert offered[1] == {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
    assert [tool.get("defer_loading") for tool in offered] == [None, None, *[True] * 6]
    for item in offered:
        assert_conforms(ToolUnionParam, item)


def test_the_order_is_the_same_on_every_request(catalogue):
    """A provider's prompt cache holds only if the tools come in the same order every time."""
    first = tools.definitions("openai-responses", defer=True, strict=True)
    for _ in range(3):
        assert tools.definitions("openai-responses", defer=True, strict=True) == first


def test_without_defer_nothing_is_deferred(catalogue):
    """defer=False (the default) offers every tool loaded, with no search tool."""
    offered = tools.definitions("anthropic")
    assert all("defer_loading" not in tool for tool in offered)
    assert "tool_search_tool_bm25" not in _names(offered)


def test_chat_completions_cannot_defer_and_always_loaded_is_a_collection():
    """Chat Completions has no tool search: asking is an error, not a silently full catalogue."""
    with pytest.raises(ValueError, match="defer=True is for"):
        tools.definitions("openai", defer=True)
    with pytest.raises(TypeError, match="collection of tool names"):
        tools.definitions("anthropic", defer=True, always_loaded="site_lookup")
