"""Local tools: Python callables an installed app contributes, offered beside the remote ones."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..mcp import LOCAL_NAME_RE, SchemaRefused, normalise_schema

ToolFunction = Callable[..., Any]


@dataclass(frozen=True)
class LocalTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    function: ToolFunction = field(repr=False)


_registry: dict[str, LocalTool] = {}


def register(
    name: str, description: str, input_schema: dict[str, Any], function: ToolFunction | None = None
) -> Any:
    """Contribute a local tool: ``register(name, description, schema, fn)`` or as a decorator.

    The schema goes through the same normaliser as a remote one, so a local tool cannot
    offer a model what a remote tool would be refused for. Registering a name twice is a
    programming error, not a silent override.
    """

    def add(fn: ToolFunction) -> ToolFunction:
        if not LOCAL_NAME_RE.fullmatch(name):
            raise ValueError(f"local tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$")
        if name in _registry:
            raise ValueError(f"a local tool named {name!r} is already registered")
        try:
            schema = normalise_schema(input_schema)
        except SchemaRefused as exc:
            raise ValueError(f"local tool {name!r}: {exc}") from exc
        _registry[name] = LocalTool(name, description, schema, fn)
        return fn

    return add if function is None else add(function)


def unregister(name: str) -> None:
    """Remove a local tool (an app being torn down, a test cleaning up)."""
    _registry.pop(name, None)


def local_tool_names() -> frozenset[str]:
    return frozenset(_registry)


def local_tool(name: str) -> LocalTool | None:
    return _registry.get(name)


def local_tools() -> list[LocalTool]:
    return list(_registry.values())
