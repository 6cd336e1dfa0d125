"""The view of docs/tool-api.md ("One call at a time") runs as printed: the real ``openai`` client,
the real SDK server, and the model's two turns replayed from recorded Chat Completions responses
(tests/recorded/openai_chat_readme.json) by a server on 127.0.0.1; no network."""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from anthropic.types import ToolParam
from django.contrib.auth.models import User
from django.test import RequestFactory
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam, ChatCompletionToolParam

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall
from tests.peers import ROOT, running, sdk_server
from tests.provider_types import assert_conforms
from tests.schema_corpus import CORPUS

from .factories import McpServerFactory

# The ledger writes on a connection of its own: the rows must be committed to be seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]
RECORDED = json.loads((ROOT / "tests" / "recorded" / "openai_chat_readme.json").read_text())


def _readme_view() -> str:
    """docs/tool-api.md's Python block that defines ``ask``."""
    readme = (ROOT / "docs" / "tool-api.md").read_text()
    (block,) = [
        block for block in re.findall(r"```python\n(.*?)```", readme, re.DOTALL) if "def ask(" in block
    ]
    return str(block)


class _Provider(ThreadingHTTPServer):
    """Answers each POST /v1/chat/completions with the next recorded response; keeps the requests."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        super().__init__(("127.0.0.1", 0), _Replay)
        self.answers = answers
        self.requests: list[dict[str, Any]] = []


class _Replay(BaseHTTPRequestHandler):
    server: _Provider

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        answer = json.dumps(self.server.answers.pop(0)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Provider]:
    """The recorded model: ``OpenAI()`` in the view reaches it through OPENAI_BASE_URL."""
    server = _Provider([RECORDED["tool_calls"], RECORDED["answer"]])
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recorded")
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _ask(*, requires_approval: bool) -> Any:
    """The README's view, run once against the SDK server with echo and pixel enabled."""
    namespace: dict[str, Any] = {}
    exec(compile(_readme_view(), "docs/tool-api.md", "exec"), namespace)
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
        assert import_catalogue(server).ok
        McpTool.objects.filter(tool_name__in=["mcp_demo_echo", "mcp_demo_pixel"]).update(enabled=True)
        McpServer.objects.filter(pk=server.pk).update(requires_approval=requires_approval)
        request = RequestFactory().post("/ask/", {"question": "Echo something and show a pixel"})
        request.user = User.objects.create_user("reader")
        return namespace["ask"](request)


def test_the_recorded_responses_are_chat_completions() -> None:
    """The replayed answers parse as the openai package's ChatCompletion."""
    for recorded in RECORDED.values():
        ChatCompletion.model_validate(recorded)


def test_the_readme_view_runs_the_models_calls_and_answers_with_its_second_turn(settings, provider):
    """Turn one offers the enabled tools; the calls run on the real server; turn two gets the
    assistant's turn, a tool message per call in order and the pixel in a user message, each a
    valid Chat Completions message; the view answers with the model's final text."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    response = _ask(requires_approval=False)
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "answer": 'The echo said "from the model", and the picture is a single pixel.',
        "waiting": [],
    }
    first, second = provider.requests
    assert sorted(offer["function"]["name"] for offer in first["tools"]) == [
        "mcp_demo_echo",
        "mcp_demo_pixel",
    ]
    messages = second["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant", "tool", "tool", "user"]
    assert [call["id"] for call in messages[1]["tool_calls"]] == ["call_echo", "call_pixel"]
    assert messages[2] == {"role": "tool", "tool_call_id": "call_echo", "content": "from the model"}
    assert messages[3]["tool_call_id"] == "call_pixel" and messages[3]["content"].startswith("a single pixel")
    assert messages[4]["content"][0] == {"type": "text", "text": "Images returned by tool call call_pixel:"}
    assert messages[4]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    for message in messages:
        assert_conforms(ChatCompletionMessageParam, message)
    assert {call.actor_label for call in ToolCall.objects.all()} == {"reader"}


def test_the_readme_view_answers_a_held_call_as_not_run_and_names_it(settings, provider):
    """On a server that requires approval nothing is sent to it; the model's next turn reads that
    each call has not run, and the view names the waiting calls."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    response = _ask(requires_approval=True)
    calls = ToolCall.objects.all()
    assert {call.status for call in calls} == {"awaiting_approval"}
    assert sorted(json.loads(response.content)["waiting"]) == sorted(str(call.pk) for call in calls)
    tool_messages = [message for message in provider.requests[1]["messages"] if message["role"] == "tool"]
    assert len(tool_messages) == 2 and all("has not run" in message["content"] for message in tool_messages)


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    """A Chat Completions response holding ``message``."""
    return {
        "id": f"chatcmpl-{finish}",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "finish_reason": finish, "message": {"role": "assistant", **message}}],
    }


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


def test_the_readme_view_works_against_a_server_with_array_parameters(settings, monkeypatch):
    """Against a server whose tools take arrays (of strings, of objects, tuples), the view runs as
    printed with the real ``openai`` client: the request has the published tool shape, every array
    schema keeps its items, and the model's call with an array argument runs on the server. The same
    tools in the Anthropic format have the shape of anthropic's published ToolParam."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    call = {"name": "mcp_demo_read_multiple_files", "arguments": '{"paths": ["a.txt", "b.txt"]}'}
    provider = _Provider(
        [
            _completion(
                {"content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": call}]},
                "tool_calls",
            ),
            _completion({"content": "Both read."}, "stop"),
        ]
    )
    threading.Thread(target=provider.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{provider.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    namespace: dict[str, Any] = {}
    exec(compile(_readme_view(), "docs/tool-api.md", "exec"), namespace)
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
    first, second = provider.requests
    for offer in first["tools"]:
        assert_conforms(ChatCompletionToolParam, offer)
    for offer in anthropic_tools:
        assert_conforms(ToolParam, offer)
    assert len(first["tools"]) == len(CORPUS) == len(anthropic_tools)
    offered = {tool["function"]["name"]: tool["function"]["parameters"] for tool in first["tools"]}
    assert {name: _array_schemas_without_items(schema) for name, schema in offered.items()} == {
        name: [] for name in offered
    }
    assert offered["mcp_demo_list_issues"]["properties"]["state"]["enum"] == ["open", "closed", "all"]
    assert json.loads(response.content) == {"answer": "Both read.", "waiting": []}
    (answer,) = [message for message in second["messages"] if message["role"] == "tool"]
    assert answer == {"role": "tool", "tool_call_id": "call_1", "content": '{"paths": ["a.txt", "b.txt"]}'}
