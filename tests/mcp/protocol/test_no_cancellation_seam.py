"""Structural pin (seed 000, "It does not cancel anything"): no cancellation seam exists.

The deadline decides what the next leg is granted and whether it is sent; nothing lets a
caller abort a request in flight. This test fails the day a cancel/abort method, a
cancellation token parameter or an extra argument appears on the client or the transport,
so that such a change is made on purpose, with its own decision record.

One such change was made on purpose: ``cancel_task`` sends MCP's ``tasks/cancel`` for a task a
server runs on its own (docs/mcp-client.md, "Tasks"). It is an operation of its own, with its
own budget, that asks the server; it aborts nothing of this client in flight, so the rule
above stands for everything else.
"""

from __future__ import annotations

import inspect
import re

import pytest

from nr_llm.mcp import McpClient
from nr_llm.mcp.protocol.transport import Transport
from nr_llm.mcp.wire.deadline import OperationDeadline

SEAM = re.compile(r"cancel|abort|interrupt|token|signal|kill|stop|halt|shutdown", re.IGNORECASE)
# The one deliberate exception (see the module's docstring): a request to a server about its task.
SERVER_TASK_REQUESTS = frozenset({"cancel_task"})


@pytest.mark.parametrize("cls", [McpClient, Transport, OperationDeadline])
def test_no_member_or_parameter_reads_as_a_cancellation_seam(cls: type) -> None:
    """No method, attribute or parameter of the client, transport or deadline is named for cancelling."""
    for name, member in inspect.getmembers(cls):
        if name.startswith("__") or (cls is McpClient and name in SERVER_TASK_REQUESTS):
            continue
        assert not SEAM.search(name), f"{cls.__name__}.{name}"
        if callable(member):
            for parameter in inspect.signature(member).parameters:
                assert not SEAM.search(parameter), f"{cls.__name__}.{name}({parameter})"


def test_the_public_signatures_are_exactly_the_documented_ones() -> None:
    """The client takes only its collaborators (and the era cache) and each operation only its own inputs.

    ``list_tools``' ``on_page`` is progress only; test_progress_callback_cannot_stop_a_walk
    proves it cannot serve as an abort.
    """
    signatures = {
        name: list(inspect.signature(getattr(McpClient, name)).parameters)
        for name in ("__init__", "ping", "list_tools", "call_tool", "poll_task", "get_task", "cancel_task")
    }
    assert signatures == {
        "__init__": [
            "self",
            # Private networks, trust, idle connections and name resolution, as one value.
            "connection",
            "clock",
            "health",
            "session_factory",
            "era_cache",
            "era_cache_seconds",
            "wall",  # epoch seconds for OAuth token expiry (absolute, so it survives a restart)
            "result_limits",  # the caps on a tool's answer, per block and in all (content.py)
            "tools_cache",  # tools/list answers shared between processes (shared_cache.py)
            "sleep",  # the wait between a task's polls (tasks.py); tests pass a fake clock's
        ],
        "ping": ["self", "endpoint"],
        "list_tools": ["self", "endpoint", "on_page", "fresh"],  # fresh: skip the shared cache
        "call_tool": [
            "self",
            "endpoint",
            "name",
            "arguments",
            "input_schema",
            "output_schema",
            "responder",
            "on_progress",  # progress only: a raising listener is logged (test_progress.py)
            "task",  # TaskOptions: the server may answer with a task, polled within the budget
        ],
        # A task kept from an earlier operation: followed, looked at, or its server asked to stop it.
        "poll_task": ["self", "endpoint", "task", "name", "output_schema", "responder", "options"],
        "get_task": ["self", "endpoint", "task", "name"],
        "cancel_task": ["self", "endpoint", "task", "name"],
    }
    public = sorted(name for name in vars(McpClient) if not name.startswith("_"))
    assert public == [
        "call_tool",
        "cancel_task",
        "complete",
        "get_prompt",
        "get_task",
        "list_features",
        "list_prompts",
        "list_resource_templates",
        "list_resources",
        "list_tools",
        "ping",
        "poll_task",
        "read_resource",
    ]


def test_the_transport_has_only_its_legs_in_public() -> None:
    """Transport exposes post, delete_session and listen (a stream bounded by its leg's grant:
    a watch's change stream, or the session's GET stream opened only for a responder) and
    nothing that could stop one."""
    public = sorted(name for name, _ in inspect.getmembers(Transport, callable) if not name.startswith("_"))
    assert public == ["delete_session", "listen", "post"]
