"""A tool pinned under the first schema rule goes to review on its next import.

Rows are written as the pre-release migration 0007 left an import's rows from before it (the first
rule kept only type, description, properties, required, additionalProperties and the combinators;
pinned_raw False, no raw definition), and the real corpus server is imported again. Nothing
translates such a pin: it compares as changed, and the operator reads the change before the tool
is offered again, never silently kept enabled.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from nr_llm.catalogue import fingerprint, import_catalogue
from nr_llm.models import DEFINITION_CHANGED, McpServer, McpTool, tool_definition
from tests.peers import running
from tests.schema_corpus import CORPUS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

_STR = {"type": "string"}
#: What the first rule stored for the corpus's list_issues, written out by hand.
FIRST_RULE_LIST_ISSUES = {
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "Repository owner"},
        "repo": {"type": "string", "description": "Repository name"},
        "state": _STR,
        "labels": {"type": "array", "description": "Filter by labels"},
        "sort": _STR,
        "direction": _STR,
        "since": _STR,
        "page": {"type": "number"},
        "perPage": {"type": "number"},
    },
    "required": ["owner", "repo"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.schema_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def _enabled_before_upgrade(url: str, description: str) -> None:
    """An enabled list_issues row as an import and an operator before 0007 left it, and 0007
    brought it along: pinned on the first rule's schema, nothing raw kept."""
    server = McpServer.objects.create(
        identifier="corpus", name="Corpus", url=url, data_class="publicContent", enabled=True
    )
    pinned = tool_definition("", description, FIRST_RULE_LIST_ISSUES, {}, {})
    McpTool.objects.create(
        server=server,
        tool_name="mcp_corpus_list_issues",
        remote_name="list_issues",
        description=description,
        input_schema=FIRST_RULE_LIST_ISSUES,
        enabled=True,
        definition_fingerprint=fingerprint(pinned),
        pinned_definition=pinned,
        pinned_fingerprint=fingerprint(pinned),
        pinned_raw=False,
        raw_definition={},
    )


def test_an_enabled_tool_pinned_under_the_first_rule_is_held_for_review(url, settings):
    """After the upgrade the row is still offered; the re-import finds the pin differs from what the
    server sends (its input schema), disables the tool for review and keeps the old pin for the
    operator to compare; accepting re-pins it on what the server sent."""
    from nr_llm import catalogue, tools

    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    _enabled_before_upgrade(url, "Corpus tool list_issues.")
    row = McpTool.objects.get()
    assert (row.pinned_raw, row.raw_definition) == (False, {})
    assert "mcp_corpus_list_issues" in {d["name"] for d in tools.definitions("anthropic")}

    report = import_catalogue(McpServer.objects.get())
    assert [str(change) for change in report.changed] == ["mcp_corpus_list_issues (input schema)"]
    row.refresh_from_db()
    assert (row.enabled, row.disabled_reason, row.pinned_raw) == (False, DEFINITION_CHANGED, False)
    assert row.pinned_definition["inputSchema"] == FIRST_RULE_LIST_ISSUES
    assert "mcp_corpus_list_issues" not in {d["name"] for d in tools.definitions("anthropic")}

    assert catalogue.accept_definition(row.pk, row.definition_fingerprint) == ""
    row.refresh_from_db()
    assert (row.enabled, row.pinned_raw) == (True, True)
    assert row.pinned_definition["inputSchema"] == CORPUS["list_issues"]
    offered = {d["name"]: d["input_schema"] for d in tools.definitions("anthropic")}
    assert offered["mcp_corpus_list_issues"]["properties"]["perPage"]["maximum"] == 100


def test_an_enabled_tool_pinned_under_the_first_rule_names_every_changed_part(url, settings):
    """A server that did change the tool since it was enabled: the review names that part too; the
    first-rule pin is kept for the operator to compare."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    _enabled_before_upgrade(url, "An older description.")
    report = import_catalogue(McpServer.objects.get())
    changed = [str(change) for change in report.changed]
    assert changed == ["mcp_corpus_list_issues (description, input schema)"]
    row = McpTool.objects.get(tool_name="mcp_corpus_list_issues")
    assert (row.enabled, row.disabled_reason, row.pinned_raw) == (False, DEFINITION_CHANGED, False)
    assert row.pinned_definition["inputSchema"] == FIRST_RULE_LIST_ISSUES
