"""The data-class ceiling: definitions() offers nothing above it, execute() refuses above it."""

from __future__ import annotations

import pytest

from nr_llm import tools
from nr_llm.governance import ceiling
from nr_llm.models import DataClass, McpServer
from tests.factories import McpServerFactory, McpToolFactory
from tests.fakes import FakeClient

from .helpers import row_of

ORDERED = [
    "publicContent",
    "editorContent",
    "sourceCode",
    "internalConfiguration",
    "systemDiagnostics",
    "secretAdjacent",
]


def test_the_six_data_classes_are_ordered_least_to_most_sensitive():
    """public content < editor content < source code < internal configuration < system diagnostics
    < secret-adjacent, and the order covers every declared class."""
    assert list(ceiling.ORDER) == ORDERED
    assert set(ceiling.ORDER) == set(DataClass.values)


@pytest.mark.parametrize(
    ("cap", "data_class", "allowed"),
    [
        ("sourceCode", "publicContent", True),
        ("sourceCode", "sourceCode", True),
        ("sourceCode", "internalConfiguration", False),
        ("secretAdjacent", "secretAdjacent", True),
        ("secretAdjacent", "somethingNew", False),
        ("secretAdjacent", "", False),
    ],
)
def test_a_ceiling_allows_its_class_and_those_below_never_an_unknown_one(cap, data_class, allowed):
    """A class this version does not know, or none, is never within a ceiling."""
    assert ceiling.allows(cap, data_class) is allowed


def _one_tool_per_class() -> None:
    for data_class in ORDERED:
        server = McpServerFactory.create(
            identifier=data_class.lower(), name=data_class, data_class=data_class
        )
        McpToolFactory.create(server=server, remote_name="t", enabled=True)


@pytest.mark.django_db
@pytest.mark.parametrize("cap", ORDERED)
def test_definitions_offer_nothing_above_the_ceiling(cap):
    """Each ceiling offers exactly the tools of its class and the classes below it."""
    _one_tool_per_class()
    offered = {d["name"] for d in tools.definitions("anthropic", data_class_ceiling=cap)}
    expected = {f"mcp_{c.lower()}_t" for c in ORDERED[: ORDERED.index(cap) + 1]}
    assert offered == expected
    assert {s.name for s in tools.available(data_class_ceiling=cap)} == expected


@pytest.mark.django_db
def test_the_setting_is_the_default_ceiling_and_everything_declared_is_offered_without_it(settings):
    """No ceiling and no setting: every declared class; NR_LLM_DATA_CLASS_CEILING narrows it."""
    _one_tool_per_class()
    assert len(tools.definitions()) == 6
    settings.NR_LLM_DATA_CLASS_CEILING = "editorContent"
    assert {d["function"]["name"] for d in tools.definitions()} == {
        "mcp_publiccontent_t",
        "mcp_editorcontent_t",
    }
    # A caller's own ceiling wins over the setting, both ways.
    assert len(tools.definitions(data_class_ceiling="secretAdjacent")) == 6


@pytest.mark.django_db
def test_an_unusable_setting_offers_public_content_only(settings):
    """A bad NR_LLM_DATA_CLASS_CEILING (manage.py check reports it) falls back to the lowest class."""
    _one_tool_per_class()
    settings.NR_LLM_DATA_CLASS_CEILING = "everything"
    assert [d["name"] for d in tools.definitions("anthropic")] == ["mcp_publiccontent_t"]


@pytest.mark.django_db
def test_a_ceiling_that_is_not_a_data_class_is_a_programming_error_in_definitions():
    """definitions() raises for a misspelt ceiling instead of guessing."""
    with pytest.raises(ValueError, match="data_class_ceiling must be one of publicContent"):
        tools.definitions(data_class_ceiling="public")


@pytest.mark.django_db
def test_local_tools_are_offered_under_every_ceiling():
    """The site's own tools carry no data class."""
    tools.register("site_ping", "Ping.", {"type": "object"}, lambda: "pong")
    try:
        assert [d["name"] for d in tools.definitions("anthropic", data_class_ceiling="publicContent")] == [
            "site_ping"
        ]
    finally:
        tools.unregister("site_ping")


@pytest.mark.django_db(transaction=True)
def test_execute_refuses_a_tool_above_the_ceiling_and_records_the_refusal():
    """Above the ceiling nothing is sent; the result says which class and which ceiling."""
    server = McpServerFactory.create(identifier="ops", name="Ops", data_class=DataClass.SYSTEM_DIAGNOSTICS)
    tool = McpToolFactory.create(server=server, remote_name="logs", enabled=True)
    client = FakeClient()
    result = tools.execute(tool.tool_name, {}, client=client, data_class_ceiling="sourceCode")
    assert result.is_error and client.calls == []
    assert result.text == (
        "tool 'mcp_ops_logs' of MCP server \"Ops\" may see System diagnostics, above this caller's "
        "data-class ceiling (Source code); it was not run"
    )
    row = row_of(result)
    assert (row.error_kind, row.data_class, row.data_class_ceiling) == (
        "above_ceiling",
        "systemDiagnostics",
        "sourceCode",
    )
    assert (
        tools.execute(tool.tool_name, {}, client=client, data_class_ceiling="systemDiagnostics").status
        == "succeeded"
    )


@pytest.mark.django_db(transaction=True)
def test_execute_with_a_misspelt_ceiling_runs_nothing():
    """A ceiling that is not a data class fails the call closed (execute never raises)."""
    server = McpServerFactory.create(identifier="pub", data_class=DataClass.PUBLIC_CONTENT)
    tool = McpToolFactory.create(server=server, remote_name="t", enabled=True)
    client = FakeClient()
    result = tools.execute(tool.tool_name, {}, client=client, data_class_ceiling="all")
    assert result.is_error and "no tool is run without a valid ceiling" in result.text
    assert client.calls == []


@pytest.mark.django_db
def test_a_server_whose_stored_class_is_unknown_offers_nothing():
    """A data class written by a newer version (or by hand) is never let through."""
    server = McpServerFactory.create(identifier="new")
    McpToolFactory.create(server=server, remote_name="t", enabled=True)
    McpServer.objects.filter(pk=server.pk).update(data_class="quantumSecrets")
    assert tools.definitions(data_class_ceiling="secretAdjacent") == []
