"""Python (pydantic) MCP servers as people run them: the official SDK's ``MCPServer`` and
``fastmcp``, each serving the twelve signatures of tests/pydantic_signatures.py on 127.0.0.1.

Every tool is imported and offered in every format, in the providers' published shapes; the
offered schema gives each instance the verdict the server itself gives (the server is asked);
and strict mode is offered exactly where OpenAI's own helper is valid strict mode, accepting
exactly what ``openai.pydantic_function_tool`` accepts. Before this work the SDK server had 4 of
12 tools offered and none strict; fastmcp 11 offered and 2 strict (bench/schema_losses.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from anthropic.types import ToolParam
from jsonschema import Draft202012Validator
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.mcp import ConnectionSettings, McpClient
from nr_llm.mcp.protocol.endpoint import Endpoint
from nr_llm.models import McpTool
from nr_llm.tools.arguments import checked_arguments
from tests.factories import McpServerFactory
from tests.peers import pydantic_server
from tests.provider_types import assert_conforms
from tests.pydantic_signatures import INSTANCES, SIGNATURES, STRICT_INSTANCES, arguments_model

pytestmark = [pytest.mark.django_db, pytest.mark.e2e]

SHAPES: dict[str, Any] = {
    "openai": ChatCompletionToolParam,
    "openai-responses": FunctionToolParam,
    "anthropic": ToolParam,
}
#: Where OpenAI's helper output is valid strict mode: not a map (additionalProperties schema),
#: a tuple (prefixItems) or a discriminated union (oneOf), which strict mode refuses.
STRICT = {"greet", "add_person", "order", "search", "sort_by", "paint", "walk", "maybe_person"}


@pytest.fixture(scope="module", params=["sdk", "fastmcp"])
def url(request) -> Iterator[str]:
    with pydantic_server(*(["--fastmcp"] if request.param == "fastmcp" else [])) as url:
        yield url


@pytest.fixture
def server(url, settings):
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="py", name="Python", url=url)
    report = import_catalogue(server)
    assert report.ok and report.skip_reasons == (), report.skip_reasons
    McpTool.objects.update(enabled=True)
    return server


def _parameters(format: str, **options: Any) -> dict[str, dict[str, Any]]:
    offered = tools.definitions(format, **options)  # type: ignore[arg-type]
    flat = [tool.get("function", tool) for tool in offered]
    key = "input_schema" if format == "anthropic" else "parameters"
    return {tool["name"].removeprefix("mcp_py_"): tool[key] for tool in flat}


@pytest.mark.parametrize("format", ["openai", "openai-responses", "anthropic"])
def test_every_tool_is_offered_in_every_format_in_the_published_shape(server, format):
    """All twelve signatures, $defs and recursion included, are offered; each definition
    validates as the provider's published request type, nothing of it dropped."""
    offered = tools.definitions(format)
    assert len(offered) == len(SIGNATURES)
    for tool in offered:
        assert_conforms(SHAPES[format], tool)


def test_the_offered_schema_gives_every_instance_the_servers_own_verdict(server, url):
    """For valid and invalid arguments alike, the offered schema (and the check before sending)
    says what the server says when it is asked."""
    offered = _parameters("anthropic")
    stored = {row.remote_name: row.input_schema for row in McpTool.objects.all()}
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    endpoint = Endpoint("py", url)
    for name, (valid, invalid) in INSTANCES.items():
        for instance in [*valid, *invalid]:
            server_accepts = not client.call_tool(endpoint, name, instance).is_error
            assert server_accepts == (instance in valid), (name, instance)
            assert Draft202012Validator(offered[name]).is_valid(instance) == server_accepts, (name, instance)
            assert (checked_arguments(stored[name], instance)[1] == []) == server_accepts, (name, instance)


@pytest.mark.parametrize("format", ["openai", "openai-responses"])
def test_strict_exactly_where_openais_helper_is(server, format):
    """strict=True makes strict the tools whose helper output strict mode takes, and no other."""
    offered = tools.definitions(format, strict=True)
    flat = [tool.get("function", tool) for tool in offered]
    assert {tool["name"].removeprefix("mcp_py_") for tool in flat if tool.get("strict")} == STRICT
    for tool in offered:
        assert_conforms(SHAPES[format], tool)


def test_the_strict_schema_accepts_exactly_what_openais_helper_accepts(server):
    """The anchor: for the same pydantic models, each strict definition gives every instance the
    verdict of ``openai.pydantic_function_tool``'s schema (no network)."""
    strict = _parameters("openai", strict=True)
    functions = {function.__name__: function for function in SIGNATURES}
    for name, instances in STRICT_INSTANCES.items():
        helper = openai.pydantic_function_tool(arguments_model(functions[name]))["function"]["parameters"]
        for instance in [*instances, *INSTANCES[name][0], *INSTANCES[name][1]]:
            ours = Draft202012Validator(strict[name]).is_valid(instance)
            assert ours == Draft202012Validator(helper).is_valid(instance), (name, instance)
