"""A tool's listed ``execution.taskSupport`` is kept, outside the pinned definition."""

from __future__ import annotations

from typing import Any

import pytest

from nr_llm import tools
from nr_llm.catalogue import enable_tools, import_catalogue
from nr_llm.models import McpTool

from ..factories import McpServerFactory
from ..fakes import FakeClient, tool

pytestmark = pytest.mark.django_db


def _import(server: Any, *listed: dict[str, Any]) -> None:
    assert import_catalogue(server, FakeClient(list(listed))).ok


def test_task_support_is_kept_as_listed():
    """Each value MCP defines is kept; anything else (absent, unknown, not text) is ""."""
    server = McpServerFactory.create(identifier="demo")
    _import(
        server,
        tool("a", execution={"taskSupport": "required"}),
        tool("b", execution={"taskSupport": "optional"}),
        tool("c", execution={"taskSupport": "forbidden"}),
        tool("d"),
        tool("e", execution={"taskSupport": "always"}),
        tool("f", execution="required"),
    )
    kept = dict(McpTool.objects.values_list("remote_name", "task_support"))
    assert kept == {"a": "required", "b": "optional", "c": "forbidden", "d": "", "e": "", "f": ""}


def test_gaining_task_support_neither_disables_nor_flags_an_enabled_tool():
    """taskSupport says how a call is delivered, not what the tool does or what a model reads: an
    enabled tool whose server starts (or stops) offering tasks stays enabled and unflagged, and
    its pin and fingerprint are those of the contract alone."""
    server = McpServerFactory.create(identifier="demo")
    _import(server, tool("search"))
    row = McpTool.objects.get()
    enable_tools([row.pk])
    row.refresh_from_db()
    fingerprint = row.definition_fingerprint
    _import(server, tool("search", execution={"taskSupport": "required"}))
    row.refresh_from_db()
    assert row.task_support == "required"
    assert row.enabled and not row.disabled_reason and not row.awaiting_review
    assert row.definition_fingerprint == fingerprint == row.pinned_fingerprint
    assert "execution" not in row.raw_definition
    assert len(tools.definitions()) == 1  # still offered to a model
    _import(server, tool("search"))
    row.refresh_from_db()
    assert row.task_support == "" and row.enabled and row.definition_fingerprint == fingerprint
