"""The tool API a site's agent loop uses: ``register``, ``definitions`` and ``execute``.

Local tools are Python callables an installed app contributes; remote tools are the
enabled, non-orphaned tools of enabled MCP servers. ``execute`` never raises for a
remote failure: the model is told the call failed and the loop carries on (seed 000).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from django.db.models import F, Q, QuerySet

from .authorization import runtime as authorization
from .endpoints import endpoint_for, mcp_client
from .mcp import CallOutcome, Endpoint, McpTransportError
from .mcp.names import LOCAL_NAME_RE
from .mcp.schema import SchemaRefused, normalise_schema
from .mcp.text import clean
from .models import DEFINITION_CHANGED, McpTool
from .redaction import redact

logger = logging.getLogger("nr_llm.tools")

ToolFunction = Callable[..., Any]
Format = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class LocalTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    function: ToolFunction = field(repr=False)


@dataclass(frozen=True)
class ToolSpec:
    """One callable tool as a caller sees it, with the policy it must gate on.

    ``data_class`` and ``requires_approval`` are the server's operator-declared values,
    never what a remote server's annotations claim; a local tool has none of either.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str = ""
    data_class: str = ""
    requires_approval: bool = False

    @property
    def is_remote(self) -> bool:
        return bool(self.server)


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool
    #: The identifier of the MCP server that answered (or failed); "" for a local tool.
    server: str = ""


class ToolCaller(Protocol):
    """The part of ``McpClient`` a tool call needs."""

    def call_tool(
        self,
        endpoint: Endpoint,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        input_schema: dict[str, Any] | None = None,
    ) -> CallOutcome: ...


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


def _offered() -> QuerySet[McpTool]:
    # A server whose data class was withdrawn is treated as undeclared: a caller gates on
    # data_class, and an empty one would let its tools through every gate unjudged. A tool
    # whose definition is not the one an operator enabled is not offered, however it got
    # enabled (catalogue.py pins definitions).
    return (
        McpTool.objects.filter(enabled=True, orphaned=False, server__enabled=True)
        .filter(_as_enabled())
        .exclude(server__data_class="")
        .select_related("server")
    )


def _as_enabled() -> Q:
    return Q(disabled_reason="", pinned_fingerprint=F("definition_fingerprint"))


def available() -> list[ToolSpec]:
    """Every tool a model may be offered: the local tools, then the remote ones by name."""
    specs = [ToolSpec(tool.name, tool.description, tool.input_schema) for tool in _registry.values()]
    rows = _offered().order_by("tool_name")
    for row in rows:
        if row.tool_name in _registry:
            # Registered after the import checked for collisions: the site's own tool wins,
            # so a remote server can never stand in for it.
            logger.warning("MCP tool %s is shadowed by a local tool of the same name", row.tool_name)
            continue
        spec = _remote_spec(row)
        if spec is not None:
            specs.append(spec)
    return specs


def spec(name: str) -> ToolSpec | None:
    """The offered tool called ``name``, for a caller gating on its policy before ``execute``."""
    if not isinstance(name, str):
        return None
    local = _registry.get(name)
    if local is not None:
        return ToolSpec(local.name, local.description, local.input_schema)
    row = _offered().filter(tool_name=name).first()
    return None if row is None else _remote_spec(row)


def definitions(format: Format = "openai") -> list[dict[str, Any]]:
    """The available tools as function-calling specs for the OpenAI or Anthropic API."""
    if format == "openai":
        return [
            {
                "type": "function",
                "function": {"name": s.name, "description": s.description, "parameters": s.input_schema},
            }
            for s in available()
        ]
    if format == "anthropic":
        return [
            {"name": s.name, "description": s.description, "input_schema": s.input_schema}
            for s in available()
        ]
    raise ValueError(f'format must be "openai" or "anthropic", not {format!r}')


def execute(
    name: str, arguments: dict[str, Any] | None = None, *, client: ToolCaller | None = None
) -> ToolResult:
    """Run a tool and return its result; a failure is an ``is_error`` result, never an exception."""
    if not isinstance(name, str):
        # A model's malformed call (a list or object as the name) is not a lookup key.
        return ToolResult(f"unknown tool {clean(name)!r}", True)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return ToolResult(f"arguments for {clean(name)!r} must be a JSON object", True)
    local = _registry.get(name)
    if local is not None:
        return _run_local(local, arguments)
    row = McpTool.objects.select_related("server").filter(tool_name=name).first()
    if row is None:
        return ToolResult(f"unknown tool {clean(name)!r}", True)
    server = row.server
    if row.disabled_reason or row.pinned_fingerprint != row.definition_fingerprint:
        # Changed since an operator enabled it: what a model was told about it may be stale.
        return ToolResult(
            f'tool {name!r} of MCP server "{server.name}" is disabled: its {DEFINITION_CHANGED}, '
            "and an operator must review the change",
            True,
            server.identifier,
        )
    if not (row.enabled and server.enabled) or row.orphaned:
        why = "no longer offered by its server" if row.orphaned else "disabled"
        return ToolResult(f'tool {name!r} of MCP server "{server.name}" is {why}', True, server.identifier)
    if not server.data_class:
        return ToolResult(
            f'MCP server "{server.name}" has no declared data class; its tools are not offered until '
            "an operator declares what data it may see",
            True,
            server.identifier,
        )
    return _run_remote(row, arguments, client)


def _remote_spec(row: McpTool) -> ToolSpec | None:
    server = row.server
    try:
        schema = normalise_schema(row.input_schema)
    except SchemaRefused as exc:
        # The stored schema was edited into something no API accepts; offering it would
        # make the model's request fail, so the tool is left out and the log says why.
        logger.warning("MCP tool %s is not offered: %s", row.tool_name, exc)
        return None
    # The origin leads the description so a model never takes remote text for the site's own.
    description = f'[via MCP server "{server.name}"] {row.description}'.rstrip()
    return ToolSpec(
        name=row.tool_name,
        description=description,
        input_schema=schema,
        server=server.identifier,
        data_class=server.data_class,
        requires_approval=server.requires_approval,
    )


def _run_local(tool: LocalTool, arguments: dict[str, Any]) -> ToolResult:
    try:
        value = tool.function(**arguments)
        text = value if isinstance(value, str) else json.dumps(value, default=str)
    except Exception as exc:
        # A reporting boundary: the agent loop gets a failed result; the traceback goes to
        # the log, not to the model (exception text may carry what a model must not see).
        logger.exception("local tool %s failed", tool.name)
        return ToolResult(f"local tool {tool.name!r} failed ({type(exc).__name__})", True)
    return ToolResult(text, False)


def _run_remote(row: McpTool, arguments: dict[str, Any], client: ToolCaller | None) -> ToolResult:
    server = row.server
    origin = f'MCP server "{server.name}" ({server.identifier})'
    endpoint = endpoint_for(server)
    try:
        # The imported schema goes along: a 2026-07-28 server reads x-mcp-header arguments as headers.
        outcome = (client or mcp_client()).call_tool(
            endpoint, row.remote_name, arguments, input_schema=row.input_schema
        )
    except McpTransportError as exc:
        authorization.observe(server, exc)
        if authorization.needs_operator(exc):
            text, is_error = authorization.unavailable_text(server, row.tool_name, exc), True
        elif exc.accepted or exc.kind == "interrupted":
            # The server took the call (or was sent it and never answered): "could not run"
            # would invite the loop to run it again.
            text = (
                f"{origin} may have run {row.remote_name!r}, but its answer was lost; do not assume "
                f"it failed, and check its effect before calling it again: {exc}"
            )
            is_error = True
        else:
            text, is_error = f"{origin} could not run {row.remote_name!r}: {exc}", True
    else:
        is_error = outcome.is_error
        text = f"{origin} reported an error: {outcome.text}" if is_error else outcome.text
    # A model must not read this installation's secret, even when a server echoes it.
    return ToolResult(redact(text, endpoint.credential), is_error, server.identifier)
