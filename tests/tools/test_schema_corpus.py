"""The schema corpus (tests/schema_corpus.py) from a real SDK server, through import, definitions()
in every format, strict mode, and execute()'s argument check.
"""

from __future__ import annotations

import json
import logging
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool, ToolCall
from nr_llm.tools import offering
from nr_llm.tools.offering import FORMATS
from nr_llm.tools.strict import STRICT_KEYWORDS
from tests.factories import McpServerFactory
from tests.peers import running
from tests.schema_corpus import CORPUS, lost_keywords

# The ledger writes on a connection of its own: the rows must be committed to be seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

#: The providers' published request types, one per format.
SHAPES: dict[str, TypeAdapter[Any]] = {
    "openai": TypeAdapter(ChatCompletionToolParam),
    "openai-responses": TypeAdapter(FunctionToolParam),
    "anthropic": TypeAdapter(ToolParam),
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.schema_server"]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture
def server(url, settings):
    """The corpus server imported, every tool enabled."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="corpus", name="Corpus", url=url)
    report = import_catalogue(server)
    assert report.ok and report.skip_reasons == ()
    McpTool.objects.update(enabled=True)
    return server


def _schemas(format: str, offered: list[dict[str, Any]]) -> dict[str, Any]:
    if format == "openai":
        return {o["function"]["name"]: o["function"]["parameters"] for o in offered}
    if format == "openai-responses":
        return {o["name"]: o["parameters"] for o in offered}
    return {o["name"]: o["input_schema"] for o in offered}


def _calls(url: str) -> int:
    with urllib.request.urlopen(url.replace("/mcp", "/requests"), timeout=10) as answer:
        return sum(1 for request in json.load(answer) if request["method"] == "tools/call")


def test_the_raw_definition_is_stored_as_the_server_sent_it(server):
    """Each corpus tool's raw definition holds its input schema exactly as written."""
    for name, schema in CORPUS.items():
        assert McpTool.objects.get(tool_name=f"mcp_corpus_{name}").raw_definition["inputSchema"] == schema


@pytest.mark.parametrize("format", FORMATS)
def test_every_corpus_schema_is_offered_with_no_keyword_lost(server, format):
    """Through import and definitions(format), no counted keyword is missing or changed at any
    depth, and every offered tool has the provider's published shape."""
    offered = tools.definitions(format)
    for tool in offered:
        SHAPES[format].validate_python(tool)
    schemas = _schemas(format, offered)
    lost = {name: lost_keywords(schema, schemas[f"mcp_corpus_{name}"]) for name, schema in CORPUS.items()}
    assert lost == {name: [] for name in CORPUS}


def _strict_rules_hold(schema: Any, path: str = "") -> None:
    """OpenAI's documented strict-mode rules, checked on one offered schema."""
    assert isinstance(schema, dict), path
    assert set(schema) <= STRICT_KEYWORDS, (path, set(schema) - STRICT_KEYWORDS)
    if "properties" in schema:
        assert schema["additionalProperties"] is False, path
        assert schema["required"] == list(schema["properties"]), path
        for name, child in schema["properties"].items():
            _strict_rules_hold(child, f"{path}/{name}")
    if "items" in schema:
        _strict_rules_hold(schema["items"], f"{path}/items")
    for branch in schema.get("anyOf", ()):
        _strict_rules_hold(branch, f"{path}/anyOf")


def test_strict_mode_is_offered_where_expressible_and_explained_where_not(server, caplog, monkeypatch):
    """strict=True: a tool whose schema strict mode can express is offered strict and obeys the
    documented rules; every other one is offered non-strict, never dropped, with its reason logged
    once per tool and process (the second format's call logs nothing)."""
    monkeypatch.setattr(offering, "_NOTED", set())
    caplog.set_level(logging.INFO, logger="nr_llm.tools")
    for format in ("openai", "openai-responses"):
        offered = tools.definitions(format, strict=True)
        for tool in offered:
            SHAPES[format].validate_python(tool)
        flat = [o.get("function", o) for o in offered]
        assert {f["name"] for f in flat} == {d["function"]["name"] for d in tools.definitions("openai")}
        strict = {f["name"] for f in flat if f.get("strict")}
        assert "mcp_corpus_read_multiple_files" in strict
        for f in flat:
            if f["name"] in strict:
                _strict_rules_hold(f["parameters"])
            else:
                assert any(
                    f["name"] in r.getMessage() and "non-strict" in r.getMessage() for r in caplog.records
                )
        logged = [r.getMessage() for r in caplog.records if "non-strict" in r.getMessage()]
        assert len(logged) == len(set(logged)) == len(flat) - len(strict)  # each said once, not twice
        # PostgreSQL's jsonb orders keys its own way: either of the query's length bounds is named first.
        assert any(
            "mcp_corpus_search" in line and ("'minLength'" in line or "'maxLength'" in line)
            for line in logged
        )
        assert "mcp_corpus_edit_file" in strict  # dryRun's default no longer keeps it non-strict


def test_invalid_arguments_never_reach_the_server(server, url):
    """A call that breaks the schema (enum, maximum, items at depth) is an is_error result naming each
    argument, recorded as refused invalid_arguments; the server receives no tools/call."""
    before = _calls(url)
    result = tools.execute(
        "mcp_corpus_query_rows",
        {"table": "1bad", "filters": [{"column": "a", "operator": "~", "value": []}], "limit": 5000},
    )
    assert result.is_error and result.status == "failed"
    assert "do not match its input schema, so the call was not sent" in result.text
    for argument in ("table", "filters/0/operator", "filters/0/value", "limit"):
        assert f"{argument}:" in result.text
    assert result.call_id is not None
    row = ToolCall.objects.get(pk=result.call_id)
    assert (row.status, row.error_kind) == ("failed", "invalid_arguments")
    assert _calls(url) == before


def test_valid_arguments_are_sent_and_a_null_for_an_optional_argument_is_left_out(server, url):
    """A valid call reaches the server once; strict mode's null for an optional argument that does
    not accept null arrives as "not given"."""
    before = _calls(url)
    result = tools.execute(
        "mcp_corpus_list_issues", {"owner": "o", "repo": "r", "labels": None, "perPage": 5}
    )
    assert not result.is_error, result.text
    assert json.loads(result.text) == {"owner": "o", "repo": "r", "perPage": 5}
    assert _calls(url) == before + 1
