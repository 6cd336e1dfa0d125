"""What a model may be offered: local tools, then the enabled remote tools within a ceiling.

``data_class_ceiling`` is the most sensitive data class the caller's model may see
(``governance/ceiling.py``); None uses ``NR_LLM_DATA_CLASS_CEILING``. Local tools are the
site's own code and carry no data class: they are offered under every ceiling.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db.models import F, Q, QuerySet

from ..governance import ceiling as ceilings
from ..mcp import SchemaRefused, normalise_schema
from ..models import McpTool
from ..providers import PROVIDERS, Provider
from .registry import local_tool, local_tool_names, local_tools
from .strict import NotStrict, strict_schema
from .threads import refuse_in_event_loop

logger = logging.getLogger("nr_llm.tools")

#: "openai": Chat Completions' ``tools``; "openai-responses": the Responses API's flat function
#: tools; "anthropic": the Messages API's ``tools`` (docs/catalogue.md, "Formats").
Format = Provider
FORMATS: tuple[Provider, ...] = PROVIDERS


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


def _offered(data_class_ceiling: str | None = None) -> QuerySet[McpTool]:
    # A server whose data class was withdrawn is treated as undeclared: a caller gates on
    # data_class, and an empty one would let its tools through every gate unjudged. A tool
    # whose definition is not the one an operator enabled is not offered, however it got
    # enabled (catalogue.py pins definitions).
    ceiling = ceilings.resolve(data_class_ceiling)
    return (
        McpTool.objects.filter(
            enabled=True,
            orphaned=False,
            server__enabled=True,
            server__data_class__in=ceilings.within(ceiling),
        )
        .filter(_as_enabled())
        .select_related("server")
    )


def _as_enabled() -> Q:
    return Q(disabled_reason="", pinned_fingerprint=F("definition_fingerprint"))


def available(*, data_class_ceiling: str | None = None) -> list[ToolSpec]:
    """Every tool a model may be offered: the local tools, then the remote ones by name."""
    specs = [ToolSpec(tool.name, tool.description, tool.input_schema) for tool in local_tools()]
    local = local_tool_names()
    for row in _offered(data_class_ceiling).order_by("tool_name"):
        if row.tool_name in local:
            # Registered after the import checked for collisions: the site's own tool wins,
            # so a remote server can never stand in for it.
            logger.warning("MCP tool %s is shadowed by a local tool of the same name", row.tool_name)
            continue
        spec = _remote_spec(row)
        if spec is not None:
            specs.append(spec)
    return specs


def spec(name: str, *, data_class_ceiling: str | None = None) -> ToolSpec | None:
    """The offered tool called ``name``, for a caller gating on its policy before ``execute``."""
    if not isinstance(name, str):
        return None
    local = local_tool(name)
    if local is not None:
        return ToolSpec(local.name, local.description, local.input_schema)
    row = _offered(data_class_ceiling).filter(tool_name=name).first()
    return None if row is None else _remote_spec(row)


def definitions(
    provider: Provider = "openai",
    *,
    data_class_ceiling: str | None = None,
    strict: bool = False,
    defer: bool = False,
    always_loaded: Collection[str] = (),
) -> list[dict[str, Any]]:
    """The available tools as function-calling specs in ``provider``.

    ``strict=True`` (OpenAI formats) offers each tool in strict mode where its schema can be
    expressed in it, and the others non-strict, each with the reason logged once.

    ``defer=True`` (``"openai-responses"``, ``"anthropic"``) loads tools on demand, for large
    catalogues: every tool not named in ``always_loaded`` is sent with ``defer_loading`` and the
    provider's tool search tool is added, so a model reads a tool's definition only when a
    search found it. Responses groups the deferred tools of each MCP server in one namespace.
    The order is the same on every request (loaded tools, the search tool, then the deferred
    ones by server and name), so a provider's prompt cache holds.
    """
    refuse_in_event_loop("definitions", "adefinitions")
    if provider not in FORMATS:
        raise ValueError(f"provider must be one of {', '.join(map(repr, FORMATS))}, not {provider!r}")
    if strict and provider == "anthropic":
        raise ValueError('strict=True is for the OpenAI formats ("openai", "openai-responses")')
    if defer and provider == "openai":
        raise ValueError(
            'defer=True is for "openai-responses" and "anthropic" (Chat Completions has no tool search)'
        )
    if isinstance(always_loaded, str):
        raise TypeError("always_loaded takes a collection of tool names, not one string")
    loaded = frozenset(always_loaded)
    offered: list[dict[str, Any]] = []
    deferred: list[tuple[ToolSpec, dict[str, Any]]] = []
    for s in available(data_class_ceiling=data_class_ceiling):
        parameters, is_strict = _parameters(s, strict)
        definition = _definition(provider, s, parameters, is_strict)
        if defer and s.name not in loaded:
            deferred.append((s, definition | {"defer_loading": True}))
        else:
            offered.append(definition)
    if defer:
        offered.append(_SEARCH_TOOL[provider])
        offered.extend(_deferred(provider, deferred))
    return offered


#: The provider's own tool search, which loads a deferred tool when a search finds it:
#: Responses' hosted ``tool_search``, Anthropic's BM25 (natural-language) search tool.
_SEARCH_TOOL: dict[str, dict[str, Any]] = {
    "openai-responses": {"type": "tool_search"},
    "anthropic": {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
}


def _definition(format: Format, s: ToolSpec, parameters: dict[str, Any], is_strict: bool) -> dict[str, Any]:
    if format == "anthropic":
        return {"name": s.name, "description": s.description, "input_schema": parameters}
    if format == "openai-responses":
        return {
            "type": "function",
            "name": s.name,
            "description": s.description,
            "parameters": parameters,
            "strict": is_strict,
        }
    function = {"name": s.name, "description": s.description, "parameters": parameters}
    return {"type": "function", "function": function | ({"strict": True} if is_strict else {})}


def _deferred(format: Format, deferred: list[tuple[ToolSpec, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The deferred definitions in a fixed order; for Responses, one namespace per MCP server
    (a site's own tools stand alone), so a search can load a server's tools together."""
    ordered = sorted(deferred, key=lambda pair: (pair[0].server, pair[0].name))
    if format != "openai-responses":
        return [definition for _, definition in ordered]
    out: list[dict[str, Any]] = []
    for server, group in itertools.groupby(ordered, key=lambda pair: pair[0].server):
        definitions = [definition for _, definition in group]
        if not server:
            out.extend(definitions)
            continue
        out.append(
            {
                "type": "namespace",
                "name": server,
                "description": f'Tools of the MCP server "{server}", loaded when a tool search finds them.',
                "tools": definitions,
            }
        )
    return out


def _parameters(spec: ToolSpec, strict: bool) -> tuple[dict[str, Any], bool]:
    """The schema a model is offered, and whether it is in strict mode."""
    schema = offered_schema(spec.input_schema)
    if not strict:
        return schema, False
    try:
        return strict_schema(schema), True
    except NotStrict as exc:
        _note_non_strict(spec.name, str(exc))
        return schema, False


#: (tool, reason) pairs already logged: definitions() runs on every request, and one line per
#: tool and process says it; a changed reason (the tool was re-imported) is said again.
_NOTED: set[tuple[str, str]] = set()
_NOTED_LOCK = threading.Lock()


def _note_non_strict(name: str, reason: str) -> None:
    with _NOTED_LOCK:
        if (name, reason) in _NOTED:
            return
        _NOTED.add((name, reason))
    logger.info("tool %s is offered non-strict: %s", name, reason)


def strict_reason(schema: dict[str, Any]) -> str:
    """Why a tool with this stored schema is offered non-strict, or "" when strict mode takes it
    (the admin shows it)."""
    try:
        strict_schema(offered_schema(normalise_schema(schema)))
    except (NotStrict, SchemaRefused) as exc:
        return str(exc)
    return ""


def offered_schema(schema: Any) -> Any:
    """``schema`` without ``x-mcp-header``: the transport's business, not the model's."""
    if isinstance(schema, dict):
        return {
            key: (
                {name: offered_schema(child) for name, child in value.items()}
                if key in _NAMED and isinstance(value, dict)
                else offered_schema(value)
                if key not in _DATA
                else value
            )
            for key, value in schema.items()
            if key != "x-mcp-header"
        }
    if isinstance(schema, list):
        return [offered_schema(item) for item in schema]
    return schema


# Keywords holding data: a key "x-mcp-header" inside a default value is the server's data.
_DATA = frozenset({"enum", "const", "default", "examples", "required", "type", "$ref"})
# Keywords mapping names (the server's, any string) to schemas.
_NAMED = frozenset({"properties", "$defs", "definitions"})


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
