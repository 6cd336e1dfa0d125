"""A stand-in MCP client for shaping catalogues no real server would send.

Only for hostile or oversized catalogues and for refusals; everything a real server can
do is tested against the real SDK server (tests.peers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nr_llm.mcp import CallOutcome, Endpoint, McpTransportError


def tool(name: Any, schema: Any = None, **extra: Any) -> dict[str, Any]:
    """A tool object as tools/list carries it."""
    entry = {"name": name, "inputSchema": {"type": "object", "properties": {}} if schema is None else schema}
    entry.update(extra)
    return entry


class FakeClient:
    """Same method signatures as McpClient; answers from a list or raises a given error."""

    def __init__(self, tools: list[dict[str, Any]] | None = None, error: McpTransportError | None = None):
        self.tools = tools or []
        self.error = error
        self.endpoints: list[Endpoint] = []
        #: (remote name, arguments) of every call_tool, in order: what the server would have run.
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def list_tools(
        self, endpoint: Endpoint, on_page: Callable[[int, int], None] | None = None
    ) -> list[dict[str, Any]]:
        self.endpoints.append(endpoint)
        if self.error:
            raise self.error
        if on_page is not None:
            on_page(1, len(self.tools))
        return list(self.tools)

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
    ) -> CallOutcome:
        self.endpoints.append(endpoint)
        self.calls.append((name, dict(arguments or {})))
        if self.error:
            raise self.error
        return CallOutcome(text=f"{name} ran", is_error=False, era="modern")
