"""The README's quickstart view and its async twin in docs/tool-api.md run as printed, against the SDK server.

The model is the one part that cannot run here: a stand-in for the ``openai`` client (answering
with the package's own message types) asks for
two tools in its first turn (as ``parallel_tool_calls`` does), then answers with what the tool
messages told it, and records every conversation it was sent.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import types
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool, ToolCall
from tests.peers import ROOT, sdk_server
from tests.provider_types import assert_conforms

from .factories import McpServerFactory

# The ledger writes on a connection of its own, the async view's calls run on the pool's
# threads: the rows must be committed to be seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _readme_views() -> str:
    """The README's ``converse`` and docs/tool-api.md's ``aconverse``, one module."""
    found = []
    for page, name in (("README.md", "def converse("), ("docs/tool-api.md", "async def aconverse(")):
        text = (ROOT / page).read_text()
        (block,) = [block for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL) if name in block]
        found.append(str(block))
    return "\n".join(found)


def _message(content: str | None, tool_calls: list[Any] | None) -> ChatCompletionMessage:
    """A chat completion message of the openai package's own type (what ``choices[0].message`` is)."""
    return ChatCompletionMessage(role="assistant", content=content, tool_calls=tool_calls)


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> ChatCompletionMessageToolCall:
    return ChatCompletionMessageToolCall(
        id=call_id, type="function", function=Function(name=name, arguments=json.dumps(arguments))
    )


class _Model:
    conversations: list[list[dict[str, Any]]] = []

    def __init__(self) -> None:
        self.chat = types.SimpleNamespace(completions=self)

    def answer(self, messages: list[dict[str, Any]]) -> Any:
        _Model.conversations.append(list(messages))
        tool_messages = [m for m in messages if m.get("role") == "tool"]
        if not tool_messages:
            message = _message(
                None,
                [
                    _call("call_echo", "mcp_demo_echo", {"text": "from the model"}),
                    _call("call_add", "mcp_demo_add", {"a": 1, "b": 2}),
                ],
            )
        else:
            message = _message(" | ".join(f"{m['tool_call_id']}={m['content']}" for m in tool_messages), None)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    def create(self, *, model: str, messages: list[dict[str, Any]], tools: Any) -> Any:
        return self.answer(messages)


class _AsyncModel(_Model):
    async def create(self, *, model: str, messages: list[dict[str, Any]], tools: Any) -> Any:
        return self.answer(messages)


@pytest.fixture
def openai_stand_in(monkeypatch: pytest.MonkeyPatch) -> type[_Model]:
    module = types.ModuleType("openai")
    module.OpenAI = _Model  # type: ignore[attr-defined]
    module.AsyncOpenAI = _AsyncModel  # type: ignore[attr-defined]
    module.NOT_GIVEN = object()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "openai", module)
    _Model.conversations = []
    return _Model


def _converse(view: str) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(_readme_views(), "README.md", "exec"), namespace)
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
        assert import_catalogue(server).ok
        McpTool.objects.filter(tool_name__in=["mcp_demo_echo", "mcp_demo_add"]).update(enabled=True)
        request = RequestFactory().post("/converse/", {"question": "Echo something and add 1 and 2"})
        user = User.objects.create_user("reader")
        request.user = user

        async def auser() -> User:
            return user

        request.auser = auser  # as AuthenticationMiddleware sets it
        if view == "aconverse":
            return asyncio.run(namespace[view](request))
        return namespace[view](request)


@pytest.mark.parametrize("view", ["converse", "aconverse"])
def test_the_readme_turn_runs_both_calls_and_answers_with_their_results(settings, openai_stand_in, view):
    """Both views run the model's two calls on the real server, send one tool message per call
    id (in the calls' order) back to the model, and answer with its final message; each call
    leaves a ledger row under the request's user."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    response = _converse(view)
    assert response.status_code == 200
    assert json.loads(response.content) == {
        "answer": "call_echo=from the model | call_add=3.0",
        "waiting": [],
    }
    first, second = openai_stand_in.conversations
    assert [m["role"] for m in second] == ["user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in second[2:]] == ["call_echo", "call_add"]
    for message in second:
        assert_conforms(ChatCompletionMessageParam, message)
    rows = ToolCall.objects.order_by("tool_name")
    assert [(r.tool_name, r.status, r.actor_label) for r in rows] == [
        ("mcp_demo_add", "succeeded", "reader"),
        ("mcp_demo_echo", "succeeded", "reader"),
    ]
