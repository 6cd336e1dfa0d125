"""docs/tool-api.md's resource read and prompt ("Resources and prompts") run as printed against the
official SDK 2.3 server (tests/peers/features_server.py, imported as server "docs"); the OpenAI
call is a stand-in that checks the messages against the ``openai`` package's published type."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from openai.types.chat import ChatCompletionMessageParam

from nr_llm.catalogue import enable_features, import_catalogue
from nr_llm.models import McpFeature, ToolCall
from tests import catalogue_peers
from tests.peers import running
from tests.provider_types import assert_conforms

from .factories import McpServerFactory

loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.e2e,
    pytest.mark.usefixtures("loopback_allowed"),
]

README = Path(__file__).resolve().parents[1] / "docs" / "tool-api.md"


def _blocks() -> list[str]:
    section = README.read_text().split("## Resources and prompts", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.fixture
def docs_server() -> Iterator[None]:
    with running([sys.executable, "-m", "tests.peers.features_server"]) as port:
        server = McpServerFactory.create(
            identifier="docs", url=f"http://127.0.0.1:{port}/mcp", enabled=True, data_class="editorContent"
        )
        assert import_catalogue(server).ok
        enable_features(McpFeature.objects.values_list("pk", flat=True))
        yield


class Completions:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def create(self, *, model: str, messages: list[Any]) -> str:
        self.sent = messages
        return "a reply"


class OpenAI:
    def __init__(self) -> None:
        self.chat = type("Chat", (), {})()
        self.chat.completions = Completions()


def test_each_example_is_five_lines(docs_server: None) -> None:
    blocks = _blocks()
    assert len(blocks) == 2
    assert all(len(block.strip().splitlines()) <= 6 for block in blocks)  # five, and the blank after imports


def test_the_readme_examples_run_as_printed(docs_server: None) -> None:
    user = User.objects.create_user("reader")
    request = type("Request", (), {"user": user})()
    read, prompt = _blocks()
    scope: dict[str, Any] = {"request": request}
    exec(read, scope)
    assert scope["context"].endswith("The readme.")
    client = OpenAI()
    scope = {"request": request, "openai_client": client, "MODEL": "gpt-test"}
    exec(prompt, scope)
    assert scope["reply"] == "a reply" and len(client.chat.completions.sent) == 2
    for message in client.chat.completions.sent:
        assert_conforms(ChatCompletionMessageParam, message)
    assert [row.actor_label for row in ToolCall.objects.order_by("created")] == ["reader", "reader"]
