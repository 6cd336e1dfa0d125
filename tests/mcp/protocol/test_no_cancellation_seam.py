"""Structural pin (seed 000, "It does not cancel anything"): no cancellation seam exists.

The deadline decides what the next leg is granted and whether it is sent; nothing lets a
caller abort a request in flight. This test fails the day a cancel/abort method, a
cancellation token parameter or an extra argument appears on the client or the transport,
so that such a change is made on purpose, with its own decision record.
"""

from __future__ import annotations

import inspect
import re

import pytest

from nr_llm.mcp import McpClient
from nr_llm.mcp.protocol.transport import Transport
from nr_llm.mcp.wire.deadline import OperationDeadline

SEAM = re.compile(r"cancel|abort|interrupt|token|signal|kill|stop|halt|shutdown", re.IGNORECASE)


@pytest.mark.parametrize("cls", [McpClient, Transport, OperationDeadline])
def test_no_member_or_parameter_reads_as_a_cancellation_seam(cls: type) -> None:
    """No method, attribute or parameter of the client, transport or deadline is named for cancelling."""
    for name, member in inspect.getmembers(cls):
        if name.startswith("__"):
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
        for name in ("__init__", "ping", "list_tools", "call_tool")
    }
    assert signatures == {
        "__init__": [
            "self",
            "allow_private_networks",
            "clock",
            "health",
            "session_factory",
            "era_cache",
            "era_cache_seconds",
            "wall",  # epoch seconds for OAuth token expiry (absolute, so it survives a restart)
            "resolver",  # host name to addresses (the system's by default; tests map names)
            "ca_bundle",  # the authorities to trust instead of certifi's
            "keepalive_seconds",  # how long a connection idles in the pool before reuse (0: off)
            "connection",  # the four above as one ConnectionSettings value (not both)
            "result_limits",  # the caps on a tool's answer, per block and in all (content.py)
            "tools_cache",  # tools/list answers shared between processes (shared_cache.py)
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
        ],
    }
    public = sorted(name for name in vars(McpClient) if not name.startswith("_"))
    assert public == [
        "call_tool",
        "complete",
        "get_prompt",
        "list_features",
        "list_prompts",
        "list_resource_templates",
        "list_resources",
        "list_tools",
        "ping",
        "read_resource",
    ]


def test_the_transport_has_only_its_legs_in_public() -> None:
    """Transport exposes post, delete_session and listen (a stream bounded by its leg's grant:
    a watch's change stream, or the session's GET stream opened only for a responder) and
    nothing that could stop one."""
    public = sorted(name for name, _ in inspect.getmembers(Transport, callable) if not name.startswith("_"))
    assert public == ["delete_session", "listen", "post"]
