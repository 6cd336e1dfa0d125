"""McpTransportError: one type, a kind to branch on, safe to format and to pickle."""

from __future__ import annotations

import pickle

from nr_llm.mcp import McpTransportError


def test_kind_server_and_message_survive_pickling() -> None:
    """A pickled error (a task queue's process boundary) comes back with kind, server and message."""
    error = McpTransportError("timeout", "demo", "MCP server 'demo' did not answer.")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.server, str(copy)) == ("timeout", "demo", "MCP server 'demo' did not answer.")


def test_repr_names_kind_and_server() -> None:
    """repr shows kind, server and message for logs and tracebacks."""
    assert repr(McpTransportError("status", "demo", "x")) == (
        "McpTransportError(kind='status', server='demo', message='x')"
    )


def test_accepted_survives_pickling() -> None:
    """Whether the server had accepted the request crosses a process boundary too."""
    error = McpTransportError("interrupted", "demo", "cut off", accepted=True)
    assert pickle.loads(pickle.dumps(error)).accepted is True
