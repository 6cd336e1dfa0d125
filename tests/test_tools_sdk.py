"""tools.execute() against the official Python SDK server on 127.0.0.1."""

import time

import pytest

from nr_llm import own_transaction, tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool
from tests.peers import sdk_server

from .factories import McpServerFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture(scope="module")
def url():
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def server(url, settings):
    """The demo server imported, with every tool enabled."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    return server


def test_definitions_offer_the_imported_tools_with_their_origin(server):
    """After enabling, the imported tools are offered, each description led by its server."""
    specs = {d["name"]: d for d in tools.definitions("anthropic")}
    assert set(specs) == {"mcp_demo_echo", "mcp_demo_add", "mcp_demo_slow", "mcp_demo_pixel", "mcp_demo_fail"}
    assert specs["mcp_demo_echo"]["description"] == '[via MCP server "Demo"] Return the text unchanged.'


def test_execute_calls_the_remote_tool_and_returns_its_text(server):
    """A remote call answers with the tool's text, naming the server; the contact is recorded."""
    result = tools.execute("mcp_demo_echo", {"text": "hi there"})
    assert (result.text, result.is_error, result.server) == ("hi there", False, "demo")
    assert own_transaction.settle(10)  # the stamp is handed over, not waited for
    server.refresh_from_db()
    assert server.last_contact is not None


def test_an_is_error_answer_is_an_error_result_naming_the_server(server):
    """isError from the server comes back as is_error=True with the server named, not an exception."""
    result = tools.execute("mcp_demo_fail", {"reason": "no stock"})
    assert result.is_error and result.server == "demo"
    assert result.text.startswith('MCP server "Demo" (demo) reported an error:')
    assert "no stock" in result.text


def test_an_image_block_is_kept_and_named_in_the_text(server):
    """The pixel tool's image block is kept in MCP shape and named, in order, in the text."""
    result = tools.execute("mcp_demo_pixel", {})
    assert not result.is_error
    assert result.text == "a single pixel\n[image: image/png, 70 bytes]"
    assert [block["mimeType"] for block in result.images] == ["image/png"]


def test_a_typed_return_gives_structured_content_checked_against_its_output_schema(server):
    """The SDK turns ``add(a, b) -> float`` into an outputSchema and structuredContent: the
    result's ``structured`` is the conforming value, the text the server's own."""
    tool = McpTool.objects.get(tool_name="mcp_demo_add")
    assert tool.output_schema["properties"]["result"]["type"] == "number"
    result = tools.execute("mcp_demo_add", {"a": 2, "b": 3})
    assert (result.is_error, result.structured, result.text) == (False, {"result": 5.0}, "5.0")


def test_a_stored_schema_the_answer_misses_makes_an_invalid_result(server):
    """The answer is checked against the schema the operator enabled: were it stricter than the
    server's answer, the call is an error naming the mismatch (its ledger kind: test_result_content.py)."""
    McpTool.objects.filter(tool_name="mcp_demo_add").update(
        output_schema={
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        }
    )
    result = tools.execute("mcp_demo_add", {"a": 2, "b": 0.5})
    assert result.is_error and "at $.result: 2.5 is not of type 'integer'" in result.text


def test_a_call_that_outlives_its_servers_budget_is_an_error_result_in_time(server):
    """A 1 s budget against a 5 s tool ends as an is_error result within budget + 1 s (+ slack)."""
    McpServer.objects.filter(pk=server.pk).update(operation_timeout=1)
    started = time.monotonic()
    result = tools.execute("mcp_demo_slow", {"seconds": 5})
    elapsed = time.monotonic() - started
    assert result.is_error and result.server == "demo"
    assert result.text.startswith("MCP server \"Demo\" (demo) could not run 'slow':")
    assert elapsed < 4.5


def test_a_stopped_server_is_an_error_result_not_an_exception(settings):
    """When the server has gone away, execute still returns; the result names the server."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with sdk_server("--stateless") as url:
        gone = McpServerFactory.create(identifier="gone", name="Gone", url=url)
        assert import_catalogue(gone).ok
    McpTool.objects.update(enabled=True)
    result = tools.execute("mcp_gone_echo", {"text": "x"})
    assert result.is_error and result.server == "gone"
    assert result.text.startswith("MCP server \"Gone\" (gone) could not run 'echo':")


def test_a_spec_carries_the_servers_declared_policy(server):
    """data_class and requires_approval are the operator's, whatever the tool's annotations say."""
    McpServer.objects.filter(pk=server.pk).update(data_class="secretAdjacent", requires_approval=True)
    spec = tools.spec("mcp_demo_echo")
    assert spec is not None
    assert (spec.data_class, spec.requires_approval) == ("secretAdjacent", True)


@pytest.mark.parametrize(
    "credential",
    [{"credential_env": "NR_LLM_TEST_UNSET_TOKEN"}, {"credential_ciphertext": "gAAAAAnot-a-token"}],
    ids=["unset-environment-variable", "undecryptable-token"],
)
def test_a_credential_that_cannot_be_resolved_is_an_error_result_and_nothing_is_sent(
    server, credential, monkeypatch
):
    """Fail closed: the call is never made unauthenticated, the caller gets an error result."""
    monkeypatch.delenv("NR_LLM_TEST_UNSET_TOKEN", raising=False)
    # The fixture's import stamped the server through a writer: let it land before clearing it.
    assert own_transaction.settle(10)
    McpServer.objects.filter(pk=server.pk).update(auth_placement="bearer", last_contact=None, **credential)
    result = tools.execute("mcp_demo_echo", {"text": "hi"})
    assert result.is_error and result.server == "demo"
    assert result.text.startswith("MCP server \"Demo\" (demo) could not run 'echo':")
    assert "credential" in result.text
    server.refresh_from_db()
    assert server.last_contact is None


class DeletingCaller:
    """The real client, but the server row is deleted after the tool was looked up."""

    def call_tool(self, endpoint, name, arguments=None, *, input_schema=None):
        McpServer.objects.filter(identifier=endpoint.identifier).delete()
        from nr_llm.servers.endpoints import mcp_client

        return mcp_client().call_tool(endpoint, name, arguments, input_schema=input_schema)


def test_a_server_deleted_during_the_call_still_returns_the_answer(server):
    """The answer is returned; stamping contact on a row that is gone is not an error."""
    result = tools.execute("mcp_demo_echo", {"text": "still here"}, client=DeletingCaller())
    assert (result.text, result.is_error, result.server) == ("still here", False, "demo")
    assert not McpServer.objects.filter(pk=server.pk).exists()
