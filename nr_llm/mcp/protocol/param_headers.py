"""``Mcp-Param-*`` headers (MCP 2026-07-28, SEP-2243): tool arguments a server asked, through
``x-mcp-header`` in the tool's input schema, to see as HTTP headers too.

A schema with an invalid annotation is refused for the whole tool (the specification says
clients MUST exclude such tools): an empty or non-token name, one on a property that is not a
string/integer/boolean, one off the plain ``properties`` chain, or two names equal ignoring
case. Values that are not plain visible ASCII travel in the base64 sentinel ``=?base64?...?=``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

from ..wire.errors import McpTransportError
from ..wire.text import clean

ANNOTATION = "x-mcp-header"
PREFIX = "Mcp-Param-"
# RFC 9110 token: the characters a field name may have.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VISIBLE = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?.*\?=")
_HEADER_TYPES = frozenset({"string", "integer", "boolean"})
# Keywords whose values are subschemas; an annotation found under one is not reachable
# through a plain properties chain, so no argument path can feed it.
_SUBSCHEMA_ONE = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
_SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUBSCHEMA_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def encode_value(value: str) -> str:
    """Plain visible ASCII without edge whitespace as is; anything else in the base64 sentinel."""
    if _VISIBLE.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode('utf-8')).decode('ascii')}?="


def _positions(schema: object) -> Iterator[tuple[tuple[str, ...] | None, dict[str, Any]]]:
    """Every subschema with its path of property names (None once off the properties chain)."""
    stack: list[tuple[tuple[str, ...] | None, object]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                stack.extend(
                    ((*path, name) if path is not None else None, sub) for name, sub in value.items()
                )
            elif keyword in _SUBSCHEMA_ONE:
                stack.append((None, value))
            elif keyword in _SUBSCHEMA_LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif keyword in _SUBSCHEMA_MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def header_map(tool: str, schema: object, server: str) -> dict[tuple[str, ...], str]:
    """Argument path -> header token for every annotation; ``invalid_tool`` for a bad one."""
    found: dict[tuple[str, ...], str] = {}
    seen: dict[str, tuple[str, ...]] = {}
    for path, node in _positions(schema):
        if ANNOTATION not in node:
            continue
        token = node[ANNOTATION]
        where = ".".join(path) if path else "(not a plain property)"
        if not path:
            _refuse(tool, server, f"{ANNOTATION} at {where}")
        elif not isinstance(token, str) or not _TOKEN.fullmatch(token):
            _refuse(tool, server, f"property {where!r} names {clean(repr(token), 60)}, not a header name")
        elif node.get("type") not in _HEADER_TYPES:
            _refuse(tool, server, f"property {where!r} is not a string, integer or boolean")
        elif token.lower() in seen:
            _refuse(tool, server, f"header {token!r} is named twice (ignoring case)")
        assert path is not None and isinstance(token, str)
        seen[token.lower()] = path
        found[path] = token
    return found


def param_headers(tool: str, schema: object, arguments: dict[str, Any], server: str) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for one call; an absent or null argument sends none."""
    headers: dict[str, str] = {}
    for path, token in header_map(tool, schema, server).items():
        value: object = arguments
        for step in path:
            value = value.get(step) if isinstance(value, dict) else None
        if value is None or isinstance(value, dict | list):
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        headers[PREFIX + token] = encode_value(text)
    return headers


def _refuse(tool: str, server: str, why: str) -> None:
    raise McpTransportError(
        "invalid_tool",
        server,
        f"MCP server {server!r}: tool {clean(tool, 100)!r} was not called: its input schema has an "
        f"invalid {ANNOTATION} ({why}).",
    )
