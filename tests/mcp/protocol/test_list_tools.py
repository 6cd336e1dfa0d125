"""list_tools: cursor paging rules, never a silently partial catalogue."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.client import MAX_PAGES

from ..scripted import URL, ScriptedServer


def _walk(
    mock, clock, pages: dict[str | None, dict[str, Any]]
) -> tuple[list[dict[str, Any]], ScriptedServer]:
    server = ScriptedServer(clock, pages=pages, session_id=None)
    server.install(mock)
    tools = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).list_tools(
        Endpoint(identifier="demo", url=URL)
    )
    return tools, server


def _refused(mock, clock, pages: dict[str | None, dict[str, Any]]) -> McpTransportError:
    with pytest.raises(McpTransportError) as caught:
        _walk(mock, clock, pages)
    assert caught.value.server == "demo"
    return caught.value


def test_next_cursor_is_followed_and_sent_back_verbatim(mock, clock) -> None:
    """Each page's nextCursor is sent as params.cursor; the last page has none; the first sends no cursor."""
    tools, server = _walk(
        mock,
        clock,
        {None: {"tools": [{"name": "a"}], "nextCursor": "opaque/1"}, "opaque/1": {"tools": [{"name": "b"}]}},
    )
    assert [tool["name"] for tool in tools] == ["a", "b"]
    assert [seen.body.get("params") for seen in server.seen[2:]] == [{}, {"cursor": "opaque/1"}]


def test_an_empty_string_cursor_continues_the_walk(mock, clock) -> None:
    """nextCursor "" is a cursor, not the end: it is sent and its page is read."""
    tools, _ = _walk(
        mock, clock, {None: {"tools": [{"name": "a"}], "nextCursor": ""}, "": {"tools": [{"name": "b"}]}}
    )
    assert [tool["name"] for tool in tools] == ["a", "b"]


def test_a_null_cursor_ends_the_walk(mock, clock) -> None:
    """nextCursor null is the end of the catalogue."""
    tools, server = _walk(mock, clock, {None: {"tools": [{"name": "a"}], "nextCursor": None}})
    assert len(tools) == 1 and server.methods.count("tools/list") == 1


def test_a_repeated_cursor_is_an_error_not_a_partial_list(mock, clock) -> None:
    """A server that hands out a cursor twice is 'malformed' (it would loop forever)."""
    error = _refused(
        mock,
        clock,
        {
            None: {"tools": [{"name": "a"}], "nextCursor": "x"},
            "x": {"tools": [{"name": "b"}], "nextCursor": "y"},
            "y": {"tools": [{"name": "c"}], "nextCursor": "x"},
        },
    )
    assert error.kind == "malformed" and "repeated" in str(error)


def test_more_than_fifty_pages_is_an_error(mock, clock) -> None:
    """A catalogue still continuing after 50 pages is refused, and page 51 is never asked for."""
    pages: dict[str | None, dict[str, Any]] = {None: {"tools": [{"name": "t0"}], "nextCursor": "1"}}
    for index in range(1, 60):
        pages[str(index)] = {"tools": [{"name": f"t{index}"}], "nextCursor": str(index + 1)}
    server = ScriptedServer(clock, pages=pages, session_id=None)
    server.install(mock)
    with pytest.raises(McpTransportError) as caught:
        McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).list_tools(
            Endpoint(identifier="demo", url=URL)
        )
    assert caught.value.kind == "malformed" and "50 pages" in str(caught.value)
    assert server.methods.count("tools/list") == MAX_PAGES == 50


def test_exactly_fifty_pages_is_accepted(mock, clock) -> None:
    """A catalogue of exactly 50 pages is returned whole."""
    pages: dict[str | None, dict[str, Any]] = {None: {"tools": [{"name": "t0"}], "nextCursor": "1"}}
    for index in range(1, 50):
        pages[str(index)] = {"tools": [{"name": f"t{index}"}]} | (
            {"nextCursor": str(index + 1)} if index < 49 else {}
        )
    tools, _ = _walk(mock, clock, pages)
    assert len(tools) == 50


def test_non_object_entries_are_dropped(mock, clock) -> None:
    """Strings, numbers and nulls in the tools list are dropped; objects are kept as sent."""
    tools, _ = _walk(mock, clock, {None: {"tools": ["x", 3, None, {"name": "a", "extra": [1]}]}})
    assert tools == [{"name": "a", "extra": [1]}]


@pytest.mark.parametrize(
    "page",
    [{"tools": "nope"}, {}, {"tools": [], "nextCursor": 7}],
    ids=["tools-not-a-list", "no-tools", "cursor-not-a-string"],
)
def test_a_page_of_the_wrong_shape_is_malformed(mock, clock, page: dict[str, Any]) -> None:
    """A page whose tools is not a list, or whose cursor is not a string, is 'malformed'."""
    assert _refused(mock, clock, {None: page}).kind == "malformed"


def test_progress_callback_cannot_stop_a_walk(mock, clock, caplog) -> None:
    """on_page is progress only: what it raises is logged and the walk still returns every page."""
    server = ScriptedServer(
        clock,
        session_id=None,
        pages={None: {"tools": [{"name": "a"}], "nextCursor": "2"}, "2": {"tools": [{"name": "b"}]}},
    )
    server.install(mock)
    heard: list[tuple[int, int]] = []

    def on_page(pages: int, tools: int) -> None:
        heard.append((pages, tools))
        raise RuntimeError("progress display broke")

    tools = McpClient(connection=ConnectionSettings(allow_private_networks=True), clock=clock).list_tools(
        Endpoint(identifier="demo", url=URL), on_page=on_page
    )
    assert [tool["name"] for tool in tools] == ["a", "b"]
    assert heard == [(1, 1), (2, 2)]
    assert "MCP progress callback failed" in caplog.text
