"""``tools.using_client``: a test double for the MCP client, and every other step production's."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync

from nr_llm import catalogue, tools
from nr_llm.mcp import CallOutcome, McpClient
from nr_llm.models import McpServer, ToolCall, ToolCallStatus
from nr_llm.servers.endpoints import mcp_client

pytestmark = pytest.mark.django_db(transaction=True)
ECHO = {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}


class Fake:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def list_tools(self, endpoint: Any, on_page: Any = None, fresh: bool = False) -> list[dict[str, Any]]:
        return [ECHO]

    def call_tool(
        self, endpoint: Any, name: str, arguments: Any = None, *, input_schema: Any = None
    ) -> CallOutcome:
        self.calls.append((name, arguments))
        return CallOutcome(text=f"echo:{arguments['text']}", is_error=False)


def _client() -> object:
    """The installation's client, as the code that builds it gets it."""
    return mcp_client()


def _server(fake: Fake, **fields: Any) -> McpServer:
    server = McpServer.objects.create(
        identifier="demo",
        name="Demo",
        url="https://demo.example/mcp",
        data_class="publicContent",
        enabled=True,
        requires_approval=False,
        **fields,
    )
    assert catalogue.import_catalogue(server).ok
    catalogue.enable_tools(server.tools.values_list("pk", flat=True))
    return server


def test_every_entry_point_reaches_the_double_and_leaves_its_ledger_row() -> None:
    fake = Fake()
    with tools.using_client(fake) as given:
        assert given is fake and _client() is fake
        _server(fake)
        one = tools.execute("mcp_demo_echo", {"text": "a"}, tool_call_id="call_1")
        # execute_many runs its calls on the pool's threads: the swap reaches them.
        turn = tools.execute_many([("mcp_demo_echo", {"text": "b"}), ("mcp_demo_echo", {"text": "c"})])
        twin = async_to_sync(tools.aexecute)("mcp_demo_echo", {"text": "d"})
    assert [r.text for r in [one, *turn, twin]] == ["echo:a", "echo:b", "echo:c", "echo:d"]
    assert sorted(arguments["text"] for _, arguments in fake.calls) == ["a", "b", "c", "d"]
    rows = ToolCall.objects.filter(pk__in=[r.call_id for r in [one, *turn, twin]])
    assert {row.status for row in rows} == {ToolCallStatus.SUCCEEDED} and rows.count() == 4
    assert isinstance(mcp_client(), McpClient)  # the block ended: production's client again


def test_approval_holds_the_call_and_resume_reaches_the_double() -> None:
    from django.contrib.auth.models import User

    fake = Fake()
    with tools.using_client(fake):
        McpServer.objects.filter(pk=_server(fake).pk).update(requires_approval=True)
        held = tools.execute("mcp_demo_echo", {"text": "x"}, actor="test")
        assert held.status == "awaiting_approval" and fake.calls == []
        tools.approve(held.call_id, User.objects.create_superuser("approver"))
        done = tools.resume(held.call_id, tool_call_id="call_7")
    assert (done.status, done.tool_call_id, fake.calls) == ("succeeded", "call_7", [("echo", {"text": "x"})])


def test_blocks_nest_and_each_restores_the_one_around_it() -> None:
    outer, inner = Fake(), Fake()
    with tools.using_client(outer):
        with tools.using_client(inner):
            assert _client() is inner
        assert _client() is outer
