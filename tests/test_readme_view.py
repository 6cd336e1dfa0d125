"""The README's view ("Calling tools from a view") runs as printed, against the SDK server.

The model is the one part that cannot run here: a stand-in for the ``openai`` package answers
with the tool call a model would make, and records what it was offered.
"""

from __future__ import annotations

import json
import re
import sys
import types
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall
from tests.peers import ROOT, sdk_server

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
