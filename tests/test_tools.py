"""The tool API: register, definitions, and execute's error results (no network here).

Remote execution against a real MCP server is in tests/test_tools_sdk.py.
"""

import logging

import pytest

from nr_llm import tools
from nr_llm.mcp import McpTransportError
from nr_llm.models import DataClass

from .factories import McpServerFactory, McpToolFactory
from .fakes import FakeClient

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def local_tool():
    """A local tool registered for one test and removed after it."""

    @tools.register("site_weather", "The site's own weather tool.", SCHEMA)
    def weather(city: str) -> dict[str, str]:
        return {"city": city, "sky": "clear"}

    yield weather
    tools.unregister("site_weather")


def test_register_as_a_decorator_returns_the_function_and_lists_the_tool(local_tool):
    """The decorator leaves the function usable and makes the tool known by name."""
    assert local_tool("Bonn") == {"city": "Bonn", "sky": "clear"}
    assert "site_weather" in tools.local_tool_names()


def test_register_as_a_call_works_too():
    """register(name, description, schema, fn) registers without decorator syntax."""
    tools.register("site_ping", "Ping.", {"type": "object"}, lambda: "pong")
    try:
        assert tools.execute("site_ping", {}) == tools.ToolResult("pong", False, "")
    finally:
        tools.unregister("site_ping")


def test_registering_a_name_twice_is_an_error(local_tool):
    """A second registration under one name is refused instead of silently replacing the first."""
    with pytest.raises(ValueError, match="already registered"):
        tools.register("site_weather", "again", SCHEMA, lambda city: city)


@pytest.mark.parametrize(
    ("name", "schema", "message"),
    [
        ("has space", {"type": "object"}, "must match"),
        ("x" * 65, {"type": "object"}, "must match"),
        ("ok_name", {"type": "string"}, 'top-level "type" must be "object"'),
        ("ok_name", {"type": "object", "if": {}}, r"uses 'if'"),
        (
            "ok_name",
            {"type": "object", "properties": {"a": {"$ref": "https://x.example/a"}}},
            "never fetched",
        ),
    ],
)
def test_register_refuses_a_bad_name_or_schema(name, schema, message):
    """A local tool obeys the same name rule and schema normaliser as a remote one."""
    with pytest.raises(ValueError, match=message):
        tools.register(name, "d", schema, lambda: None)
    assert name not in tools.local_tool_names()


def _remote(enabled=True, server_enabled=True, orphaned=False, **fields):
    server = McpServerFactory.create(
        identifier=fields.pop("identifier", "demo"),
        name=fields.pop("server_name", "Demo server"),
        enabled=server_enabled,
        data_class=fields.pop("data_class", DataClass.SOURCE_CODE),
        requires_approval=fields.pop("requires_approval", False),
    )
    return McpToolFactory.create(
        server=server, remote_name="echo", enabled=enabled, orphaned=orphaned, input_schema=SCHEMA, **fields
    )


def test_openai_definitions_list_local_then_enabled_remote_tools_with_their_origin(local_tool):
    """A remote description starts with its server, so a model never takes it for the site's own."""
    _remote(description="Echo the text.")
    assert tools.definitions("openai") == [
        {
            "type": "function",
            "function": {
                "name": "site_weather",
                "description": "The site's own weather tool.",
                "parameters": SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "mcp_demo_echo",
                "description": '[via MCP server "Demo server"] Echo the text.',
                "parameters": SCHEMA,
            },
        },
    ]


def test_anthropic_definitions_use_input_schema():
    """The Anthropic shape is name, description and input_schema."""
    _remote(description="Echo.")
    assert tools.definitions(provider="anthropic") == [
        {
            "name": "mcp_demo_echo",
            "description": '[via MCP server "Demo server"] Echo.',
            "input_schema": SCHEMA,
        }
    ]


def test_an_unknown_format_is_an_error():
    """Only the two documented formats exist."""
    with pytest.raises(ValueError, match="provider must be one of 'openai', 'openai-responses', 'anthropic'"):
        tools.definitions("gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "state",
    [{"enabled": False}, {"server_enabled": False}, {"orphaned": True}],
    ids=["tool disabled", "server disabled", "orphaned"],
)
def test_disabled_or_orphaned_tools_are_not_offered(state):
    """Only enabled, non-orphaned tools of enabled servers yield a definition."""
    _remote(**state)
    assert tools.definitions() == []


def test_a_stored_schema_that_is_no_longer_an_object_yields_no_definition(caplog):
    """A schema edited into something else is left out, and the log says which tool and why."""
    _remote(identifier="a")
    broken = _remote(identifier="b")
    broken.input_schema = {"type": "array"}
    broken.save()
    with caplog.at_level(logging.WARNING, logger="nr_llm.tools"):
        names = [d["function"]["name"] for d in tools.definitions()]
    assert names == ["mcp_a_echo"]
    assert "mcp_b_echo is not offered" in caplog.text


def test_a_remote_tool_carries_its_servers_declared_policy_not_its_annotations():
    """data_class and requires_approval come from the server row, whatever the remote claims."""
    _remote(
        data_class=DataClass.SECRET_ADJACENT,
        requires_approval=True,
        remote_annotations={"readOnlyHint": True, "destructiveHint": False, "requiresApproval": False},
    )
    [spec] = tools.available()
    assert (spec.server, spec.data_class, spec.requires_approval) == ("demo", "secretAdjacent", True)
    assert spec.is_remote
    assert tools.spec("mcp_demo_echo") == spec


def test_spec_finds_a_local_tool_and_nothing_for_an_unoffered_one(local_tool):
    """spec() answers for offered tools only: local ones, enabled remote ones."""
    _remote(enabled=False)
    local = tools.spec("site_weather")
    assert local is not None and (local.server, local.requires_approval, local.is_remote) == (
        "",
        False,
        False,
    )
    assert tools.spec("mcp_demo_echo") is None
    assert tools.spec("nope") is None


def test_a_local_tool_registered_after_an_import_shadows_the_remote_one(caplog):
    """The site's own tool wins a name clash, and the clash is logged."""
    _remote()
    tools.register("mcp_demo_echo", "Local echo.", {"type": "object"}, lambda: "local")
    try:
        with caplog.at_level(logging.WARNING, logger="nr_llm.tools"):
            specs = tools.available()
    finally:
        tools.unregister("mcp_demo_echo")
    assert [(s.name, s.server) for s in specs] == [("mcp_demo_echo", "")]
    assert "shadowed by a local tool" in caplog.text


def test_execute_runs_a_local_tool_and_encodes_a_non_text_answer_as_json(local_tool):
    """A local tool's dict answer comes back as JSON text."""
    assert tools.execute("site_weather", {"city": "Bonn"}) == tools.ToolResult(
        '{"city": "Bonn", "sky": "clear"}', False, ""
    )


def test_a_failing_local_tool_is_an_error_result_with_the_traceback_only_in_the_log(local_tool, caplog):
    """Wrong arguments (or a raising tool) give is_error; the exception text stays in the log."""
    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"):
        result = tools.execute("site_weather", {"town": "Bonn"})
    assert result == tools.ToolResult("local tool 'site_weather' failed (TypeError)", True, "", "failed")
    assert "unexpected keyword argument 'town'" in caplog.text


def test_a_local_answer_that_cannot_be_encoded_is_an_error_result():
    """An answer json cannot encode (a cycle) is a failed result, not an exception."""
    loop: list[object] = []
    loop.append(loop)
    tools.register("site_loop", "Cyclic.", {"type": "object"}, lambda: loop)
    try:
        result = tools.execute("site_loop")
    finally:
        tools.unregister("site_loop")
    assert result == tools.ToolResult("local tool 'site_loop' failed (ValueError)", True, "", "failed")


def test_execute_of_an_unknown_tool_is_an_error_result():
    """An unknown name never raises."""
    assert tools.execute("nope", {}) == tools.ToolResult("unknown tool 'nope'", True, "", "failed")


@pytest.mark.parametrize(
    ("state", "why"),
    [
        ({"enabled": False}, "disabled"),
        ({"server_enabled": False}, "disabled"),
        ({"orphaned": True}, "no longer"),
    ],
)
def test_execute_of_a_disabled_or_orphaned_tool_is_an_error_result_naming_the_server(state, why):
    """The remote server is never asked; the result names the server."""
    _remote(**state)
    client = FakeClient()
    result = tools.execute("mcp_demo_echo", {"city": "x"}, client=client)
    assert result.is_error and result.server == "demo"
    assert why in result.text and 'MCP server "Demo server"' in result.text
    assert client.endpoints == []


def test_arguments_that_are_not_an_object_are_an_error_result():
    """A model sending a list instead of an object gets an error, not a crash."""
    result = tools.execute("mcp_demo_echo", ["x"])  # type: ignore[arg-type]
    assert result.is_error and "must be a JSON object" in result.text


def test_a_transport_failure_is_an_error_result_naming_the_server():
    """McpTransportError never reaches the caller's loop."""
    _remote()
    error = McpTransportError("unreachable", "demo", "MCP server demo could not be reached")
    result = tools.execute("mcp_demo_echo", {"city": "x"}, client=FakeClient(error=error))
    assert result == tools.ToolResult(
        "MCP server \"Demo server\" (demo) could not run 'echo': MCP server demo could not be reached",
        True,
        "demo",
        "failed",
    )


def test_an_accepted_call_that_was_cut_off_tells_the_model_the_tool_may_have_run():
    """An 'interrupted' call (accepted by the server, its answer lost) is an error result that
    says the tool may have run and to check before calling again, never "could not run"."""
    _remote()
    error = McpTransportError(
        "interrupted",
        "demo",
        "MCP server 'demo' accepted the call of tool 'echo', but its answer was cut off: the "
        "connection broke during the answer. The tool may have run; the call is not sent again.",
        accepted=True,
    )
    result = tools.execute("mcp_demo_echo", {"city": "x"}, client=FakeClient(error=error))
    assert result.is_error and result.server == "demo"
    assert result.text.startswith("MCP server \"Demo server\" (demo) may have run 'echo'")
    assert "check its effect before calling it again" in result.text and "could not run" not in result.text


def test_a_call_sent_and_never_answered_tells_the_model_the_tool_may_have_run():
    """'interrupted' without acceptance (the call was written, the connection closed before any
    answer) may have run too: the same "may have run", never "could not run"."""
    _remote()
    error = McpTransportError(
        "interrupted",
        "demo",
        "MCP server 'demo' was sent the call of tool 'echo', but the connection closed before any "
        "answer. The tool may have run; the call is not sent again.",
    )
    result = tools.execute("mcp_demo_echo", {"city": "x"}, client=FakeClient(error=error))
    assert result.is_error and "may have run 'echo'" in result.text and "could not run" not in result.text
    # Said once: the client's own sentence is not repeated after the site's.
    assert result.text.count("may have run") == 1 and "connection closed before any answer" in result.text


def test_a_remote_call_goes_under_its_servers_budget_with_the_remote_name():
    """The endpoint carries the server's operation_timeout; the remote name is what is called."""
    tool = _remote()
    tool.server.operation_timeout = 9
    tool.server.save()
    client = FakeClient()
    result = tools.execute("mcp_demo_echo", {"city": "x"}, client=client)
    assert result == tools.ToolResult("echo ran", False, "demo")
    assert client.endpoints[0].budget_seconds == 9.0


@pytest.mark.parametrize("name", [None, 7, ["mcp_demo_echo"], {"name": "mcp_demo_echo"}])
def test_a_name_that_is_not_text_is_an_error_result_and_has_no_spec(name):
    """A model sending a non-string tool name gets an unknown-tool result, never an exception;
    a caller gating on spec() first gets None."""
    _remote()
    result = tools.execute(name, {})
    assert result.is_error and result.text.startswith("unknown tool ")
    assert tools.spec(name) is None


def test_a_server_without_a_declared_data_class_offers_no_tools():
    """Withdrawing a server's data class withdraws its tools: not listed, not specced, not run."""
    server = McpServerFactory.create(identifier="vague", data_class="")
    McpToolFactory.create(server=server, remote_name="echo", enabled=True)
    client = FakeClient()
    assert "mcp_vague_echo" not in [d["function"]["name"] for d in tools.definitions()]
    assert tools.spec("mcp_vague_echo") is None
    result = tools.execute("mcp_vague_echo", {}, client=client)
    assert result.is_error
    assert result.server == "vague"
    assert "no declared data class" in result.text
    assert client.endpoints == []


def test_x_mcp_header_is_never_offered_from_inside_definitions():
    """A header argument declared in a $defs model is the transport's business there too; a
    definition merely named like the keyword is a name, and kept."""
    from nr_llm.tools.offering import offered_schema

    schema = {
        "type": "object",
        "$defs": {
            "Region": {"type": "string", "x-mcp-header": "Region"},
            "x-mcp-header": {"type": "integer"},
        },
        "properties": {"region": {"$ref": "#/$defs/Region"}, "n": {"$ref": "#/$defs/x-mcp-header"}},
    }
    offered = offered_schema(schema)
    assert offered["$defs"] == {"Region": {"type": "string"}, "x-mcp-header": {"type": "integer"}}
    assert offered["properties"] == schema["properties"]
