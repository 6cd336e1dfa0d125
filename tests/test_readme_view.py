"""The README's view ("Calling tools from a view") runs as printed, against the SDK server.

The model is the one part that cannot run here: a stand-in for the ``openai`` package (or, for
the real ``openai`` client, a stand-in endpoint on 127.0.0.1) answers with the tool call a model
would make, and records what it was offered.
"""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import types
from typing import Any, ClassVar

import pytest
from anthropic.types import ToolParam
from django.contrib.auth.models import User
from django.test import RequestFactory
from openai.types.chat import ChatCompletionToolParam
from pydantic import TypeAdapter

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall
from tests.peers import ROOT, running, sdk_server
from tests.schema_corpus import CORPUS

from .factories import McpServerFactory

# The ledger writes on a connection of its own: the rows must be committed to be seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _readme_view() -> str:
    """The README's Python block that defines ``ask``."""
    readme = (ROOT / "README.md").read_text()
    (block,) = [
        block for block in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if "def ask(" in block
    ]
    return str(block)


class _Model:
    """``OpenAI()`` as the view uses it: one chat completion that asks for ``echo``."""

    offered: list[Any] = []

    def __init__(self) -> None:
        self.chat = types.SimpleNamespace(completions=self)

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: Any) -> Any:
        _Model.offered = tools
        call = types.SimpleNamespace(
            function=types.SimpleNamespace(name="mcp_demo_echo", arguments='{"text": "from the model"}')
        )
        message = types.SimpleNamespace(content="Here it is.", tool_calls=[call])
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])


@pytest.fixture
def openai_stand_in(monkeypatch: pytest.MonkeyPatch) -> type[_Model]:
    module = types.ModuleType("openai")
    module.OpenAI = _Model  # type: ignore[attr-defined]
    module.NOT_GIVEN = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "openai", module)
    return _Model


def _ask(*, requires_approval: bool) -> Any:
    """The README's view, run once against the SDK server with mcp_demo_echo enabled."""
    namespace: dict[str, Any] = {}
    exec(compile(_readme_view(), "README.md", "exec"), namespace)
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
        assert import_catalogue(server).ok
        McpTool.objects.filter(tool_name="mcp_demo_echo").update(enabled=True)
        McpServer.objects.filter(pk=server.pk).update(requires_approval=requires_approval)
        request = RequestFactory().post("/ask/", {"question": "Echo something"})
        request.user = User.objects.create_user("reader")
        return namespace["ask"](request)


def test_the_readme_view_offers_the_enabled_tools_and_runs_the_models_call(settings, openai_stand_in):
    """The view offers exactly the enabled tool, runs the call the model asked for on the real
    server, and answers with the model's text and the tool's result."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    response = _ask(requires_approval=False)
    assert [offer["function"]["name"] for offer in openai_stand_in.offered] == ["mcp_demo_echo"]
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "answer": "Here it is.",
        "tool_results": [{"tool": "mcp_demo_echo", "text": "from the model", "failed": False}],
    }
    assert ToolCall.objects.get().actor_label == "reader"


def test_the_readme_view_holds_a_call_that_needs_approval(settings, openai_stand_in):
    """On a server that requires approval the view answers with the waiting call's id; the
    server is not asked."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    response = _ask(requires_approval=True)
    call = ToolCall.objects.get()
    assert json.loads(response.content)["tool_results"] == [
        {"tool": "mcp_demo_echo", "waiting": str(call.pk)}
    ]
    assert (call.status, call.actor_label) == ("awaiting_approval", "reader")


class _Provider(http.server.BaseHTTPRequestHandler):
    """OpenAI's chat completions endpoint on 127.0.0.1: keeps each request body, answers with a call."""

    bodies: ClassVar[list[dict[str, Any]]] = []
    call: ClassVar[dict[str, str]] = {}

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Provider.bodies.append(body)
        tool_call = {"id": "call_1", "type": "function", "function": _Provider.call}
        message = {"role": "assistant", "content": "Here it is.", "tool_calls": [tool_call]}
        answer = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _array_schemas_without_items(schema: Any, path: str = "") -> list[str]:
    """Where an array schema says nothing of its items (OpenAI: HTTP 400 "array schema missing items")."""
    found: list[str] = []
    if isinstance(schema, dict):
        kinds = schema.get("type")
        if "array" in (kinds if isinstance(kinds, list) else [kinds]) and not (
            "items" in schema or "prefixItems" in schema
        ):
            found.append(path or "/")
        for key, value in schema.items():
            if key in ("enum", "const", "default", "examples", "required"):
                continue
            found += _array_schemas_without_items(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            found += _array_schemas_without_items(item, f"{path}/{index}")
    return found


def test_the_readme_view_works_with_the_real_openai_client_against_a_server_with_array_parameters(
    settings, monkeypatch
):
    """Against a server whose tools take arrays (arrays of strings, of objects, tuples), the view runs
    as printed with the real ``openai`` client: the request it sends has the published tool shape,
    every array schema keeps its items, and the model's call with an array argument runs on the server.
    The same tools in the Anthropic format have the shape of anthropic's published ToolParam."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    provider = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{provider.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    _Provider.bodies = []
    _Provider.call = {"name": "mcp_demo_read_multiple_files", "arguments": '{"paths": ["a.txt", "b.txt"]}'}
    namespace: dict[str, Any] = {}
    exec(compile(_readme_view(), "README.md", "exec"), namespace)
    try:
        with running([sys.executable, "-m", "tests.peers.schema_server"]) as port:
            server = McpServerFactory.create(
                identifier="demo", name="Demo", url=f"http://127.0.0.1:{port}/mcp"
            )
            assert import_catalogue(server).ok
            McpTool.objects.filter(remote_name__in=CORPUS).update(enabled=True)
            request = RequestFactory().post("/ask/", {"question": "Read a.txt and b.txt"})
            request.user = User.objects.create_user("reader")
            response = namespace["ask"](request)
            anthropic_tools = tools.definitions("anthropic", data_class_ceiling="sourceCode")
    finally:
        provider.shutdown()
        provider.server_close()
    (body,) = _Provider.bodies
    TypeAdapter(list[ChatCompletionToolParam]).validate_python(body["tools"])
    TypeAdapter(list[ToolParam]).validate_python(anthropic_tools)
    assert len(body["tools"]) == len(CORPUS) == len(anthropic_tools)
    offered = {tool["function"]["name"]: tool["function"]["parameters"] for tool in body["tools"]}
    assert {name: _array_schemas_without_items(schema) for name, schema in offered.items()} == {
        name: [] for name in offered
    }
    assert offered["mcp_demo_list_issues"]["properties"]["state"]["enum"] == ["open", "closed", "all"]
    assert json.loads(response.content) == {
        "answer": "Here it is.",
        "tool_results": [
            {"tool": "mcp_demo_read_multiple_files", "text": '{"paths": ["a.txt", "b.txt"]}', "failed": False}
        ],
    }
