"""Pins compare what the server sent (``raw_definition``), kept size-capped and storable."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm import tools
from nr_llm.catalogue import MAX_RAW_PART_BYTES, enable_tools, import_catalogue, review
from nr_llm.models import DEFINITION_CHANGED, McpTool

from ..factories import McpServerFactory
from ..fakes import FakeClient, tool

pytestmark = pytest.mark.django_db

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


def _imported(schema: dict[str, Any], server: Any = None) -> McpTool:
    server = server or McpServerFactory.create(identifier="demo")
    assert import_catalogue(server, FakeClient([tool("search", schema)])).ok
    return McpTool.objects.get(server=server)


def test_the_raw_definition_is_what_the_server_sent():
    """Dropped annotations included: the raw input schema is the advertised one, and it is pinned."""
    schema = {**SCHEMA, "$comment": "internal", "x-vendor": {"a": 1}}
    row = _imported(schema)
    assert row.raw_definition["inputSchema"] == schema
    assert row.input_schema == SCHEMA
    assert (row.pinned_definition, row.pinned_raw) == (row.raw_definition, True)


def test_a_part_too_large_or_unstorable_is_kept_as_its_digest():
    """Over 32 KiB, or holding a NUL (PostgreSQL stores none), the part is its SHA-256: still compared."""
    big = _imported({**SCHEMA, "$comment": "x" * MAX_RAW_PART_BYTES})
    assert set(big.raw_definition["inputSchema"]) == {"not kept", "sha256"}
    nul = _imported({**SCHEMA, "$comment": "a\x00b"}, McpServerFactory.create(identifier="other"))
    assert set(nul.raw_definition["inputSchema"]) == {"not kept", "sha256"}


def test_a_change_only_in_what_the_normaliser_drops_is_still_a_change_by_the_server():
    """What the server sent changed ($comment): an enabled tool is disabled for review, although
    what a model is offered is the same; the review shows both raw schemas."""
    server = McpServerFactory.create(identifier="demo")
    row = _imported({**SCHEMA, "$comment": "one"}, server)
    enable_tools([row.pk])
    report = import_catalogue(server, FakeClient([tool("search", {**SCHEMA, "$comment": "two"})]))
    assert [str(change) for change in report.changed] == ["mcp_demo_search (input schema)"]
    row.refresh_from_db()
    assert (row.enabled, row.disabled_reason) == (False, DEFINITION_CHANGED)
    assert tools.definitions("anthropic") == []
    old, new = review(row)
    assert (old["inputSchema"]["$comment"], new["inputSchema"]["$comment"]) == ("one", "two")


def test_an_unchanged_server_keeps_an_enabled_tool_enabled_across_imports():
    """Re-importing what the server sent before changes nothing and writes no pin."""
    server = McpServerFactory.create(identifier="demo")
    row = _imported(SCHEMA, server)
    enable_tools([row.pk])
    report = import_catalogue(server, FakeClient([tool("search", SCHEMA)]))
    assert report.changed == ()
    assert [d["name"] for d in tools.definitions("anthropic")] == ["mcp_demo_search"]
