"""docs/tool-api.md's "hold a turn, resume it, continue" blocks run as printed, for OpenAI Chat
Completions and Anthropic Messages: the model's turn in each package's own types, the continued
conversation checked against each package's request types, a stand-in for each client (no
network) and a test double for the MCP server (``tools.using_client``)."""

from __future__ import annotations

import json
import re
import sys
import types
from typing import Any

import pytest
from anthropic.types import Message, MessageParam, TextBlock, ToolUseBlock, Usage
from django.contrib.auth.models import User
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam
from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

from nr_llm import catalogue, tools
from nr_llm.mcp import CallOutcome
from nr_llm.models import McpServer
from tests.peers import ROOT
from tests.provider_types import assert_conforms

pytestmark = pytest.mark.django_db(transaction=True)
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}}


class Orders:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def list_tools(self, endpoint: Any, on_page: Any = None, fresh: bool = False) -> list[dict[str, Any]]:
        return [{"name": "refund", "inputSchema": SCHEMA}]

    def call_tool(
        self, endpoint: Any, name: str, arguments: Any = None, *, input_schema: Any = None
    ) -> CallOutcome:
        self.calls.append((name, arguments))
        return CallOutcome(text=f"refunded order {arguments['id']}", is_error=False)


class Recorder:
    """Stands in for a provider's client: records the conversation it is sent, checked against the
    package's request type, and answers with ``reply``."""

    def __init__(self, published: Any, reply: Any) -> None:
        self.published, self.reply = published, reply
        self.sent: list[list[dict[str, Any]]] = []

    def create(self, **request: Any) -> Any:
        for message in request["messages"]:
            assert_conforms(self.published, message)
        self.sent.append(request["messages"])
        return self.reply


def _blocks() -> str:
    page = (ROOT / "docs" / "tool-api.md").read_text()
    names = ("def run_turn(", "def continue_openai(", "def continue_anthropic(")
    return "\n".join(
        b for b in re.findall(r"```python\n(.*?)```", page, re.DOTALL) if any(n in b for n in names)
    )


@pytest.fixture
def orders(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake = Orders()
    with tools.using_client(fake):
        server = McpServer.objects.create(
            identifier="orders",
            name="Orders",
            url="https://orders.example/mcp",
            data_class="editorContent",
            enabled=True,
            requires_approval=True,
        )
        assert catalogue.import_catalogue(server).ok
        catalogue.enable_tools(server.tools.values_list("pk", flat=True))
        yield fake


def _namespace(monkeypatch: pytest.MonkeyPatch, openai: Recorder, anthropic: Recorder) -> dict[str, Any]:
    openai_module = types.ModuleType("openai")
    openai_module.OpenAI = lambda: types.SimpleNamespace(chat=types.SimpleNamespace(completions=openai))  # type: ignore[attr-defined]
    anthropic_module = types.ModuleType("anthropic")
    anthropic_module.Anthropic = lambda: types.SimpleNamespace(messages=anthropic)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "openai", openai_module)
    monkeypatch.setitem(sys.modules, "anthropic", anthropic_module)
    namespace: dict[str, Any] = {}
    exec(compile(_blocks(), "docs/tool-api.md", "exec"), namespace)
    return namespace


def _decide(kept: list[tuple[str, str]]) -> None:
    """An operator approves the first call of the turn and denies the second."""
    approver = User.objects.create_superuser("approver")
    tools.approve(kept[0][1], approver)
    tools.deny(kept[1][1], approver, "not this one")


def test_an_openai_turn_held_for_approval_continues_with_the_real_answers(orders, monkeypatch):
    final = ChatCompletionMessage(role="assistant", content="Order 1 is refunded; order 2 was not.")
    openai = Recorder(
        ChatCompletionMessageParam, types.SimpleNamespace(choices=[types.SimpleNamespace(message=final)])
    )
    namespace = _namespace(monkeypatch, openai, Recorder(MessageParam, None))
    calls: list[Any] = [
        ChatCompletionMessageToolCall(
            id=f"call_{n}",
            type="function",
            function=Function(name="mcp_orders_refund", arguments=json.dumps({"id": n})),
        )
        for n in ("1", "2")
    ]
    turn = ChatCompletionMessage(role="assistant", content=None, tool_calls=list(calls))
    messages = [
        {"role": "user", "content": "Refund orders 1 and 2"},
        turn.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True),
    ]
    results, kept = namespace["run_turn"](turn.tool_calls, "reader")
    assert [r.status for r in results] == ["awaiting_approval"] * 2 and orders.calls == []
    _decide(kept)
    messages, reply = namespace["continue_openai"](messages, kept, tools.definitions("openai"))
    assert reply is final and orders.calls == [("refund", {"id": "1"})]
    (sent,) = openai.sent
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in sent[2:]] == ["call_1", "call_2"]
    assert "refunded order 1" in sent[2]["content"] and "was denied" in sent[3]["content"]


def test_an_anthropic_turn_held_for_approval_continues_with_the_real_answers(orders, monkeypatch):
    usage = Usage(input_tokens=1, output_tokens=1)
    final = Message(
        id="msg_2",
        type="message",
        role="assistant",
        model="claude",
        content=[TextBlock(type="text", text="Done.")],
        stop_reason="end_turn",
        stop_sequence=None,
        usage=usage,
    )
    anthropic = Recorder(MessageParam, final)
    namespace = _namespace(monkeypatch, Recorder(ChatCompletionMessageParam, None), anthropic)
    turn = Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude",
        stop_reason="tool_use",
        stop_sequence=None,
        usage=usage,
        content=[
            TextBlock(type="text", text="Refunding both."),
            *(
                ToolUseBlock(type="tool_use", id=f"toolu_{n}", name="mcp_orders_refund", input={"id": n})
                for n in "12"
            ),
        ],
    )
    messages = [
        {"role": "user", "content": "Refund orders 1 and 2"},
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in turn.content]},
    ]
    uses = [block for block in turn.content if block.type == "tool_use"]
    results, kept = namespace["run_turn"](uses, "reader")
    assert kept is not None and orders.calls == []
    _decide(kept)
    messages, reply = namespace["continue_anthropic"](messages, kept, tools.definitions("anthropic"))
    assert reply is final and orders.calls == [("refund", {"id": "1"})]
    (sent,) = anthropic.sent
    answers = sent[2]["content"]
    assert [a["tool_use_id"] for a in answers] == ["toolu_1", "toolu_2"]
    assert answers[0]["is_error"] is False and answers[1]["is_error"] is True


def test_resuming_the_turn_again_sends_nothing_twice(orders, monkeypatch):
    namespace = _namespace(
        monkeypatch, Recorder(ChatCompletionMessageParam, None), Recorder(MessageParam, None)
    )
    _, kept = namespace["run_turn"](
        [("mcp_orders_refund", {"id": "1"}), ("mcp_orders_refund", {"id": "2"})], "r"
    )
    # Pairs carry no provider id: kept holds None for it, and resume keeps it None.
    _decide(kept)
    first = namespace["after_approval"](kept)
    again = namespace["after_approval"](kept)
    assert orders.calls == [("refund", {"id": "1"})]
    assert first[0].status == again[0].status == "succeeded" and "not run again" in again[0].text
