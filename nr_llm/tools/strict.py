"""OpenAI's strict mode: the tool's schema as a strict-mode schema, or why it cannot be one.

Strict mode constrains the model's sampling to the schema, and accepts only a subset of JSON
Schema (OpenAI's Structured Outputs guide, "Supported schemas"): every object lists its
properties, sets ``additionalProperties: false`` and requires every property (an optional one
is made nullable, and ``nr_llm.tools.arguments`` reads a null for it back as "not given"); only the
keywords in ``STRICT_KEYWORDS``; at most ten levels of nesting; the root is an object, not an
``anyOf``. A schema outside that is offered non-strict with the reason logged: never dropped,
never made "strict" by removing what the server asked for.
"""

from __future__ import annotations

from typing import Any

from ..mcp.wire.text import clean

#: The keywords strict mode supports (description: an annotation it reads).
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
MAX_STRICT_DEPTH = 10
MAX_STRICT_ENUM_VALUES = 1000


class NotStrict(ValueError):
    """The schema cannot be expressed in strict mode; the message says where and why."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in strict mode's terms, or ``NotStrict``; the meaning for the server is kept."""
    if "anyOf" in schema:
        raise NotStrict("the root is an anyOf, which strict mode does not accept")
    counter = [0]
    result = _strict(schema, "", 1, in_union=False, enums=counter)
    if counter[0] > MAX_STRICT_ENUM_VALUES:
        raise NotStrict(
            f"it has {counter[0]} enum values; strict mode accepts at most {MAX_STRICT_ENUM_VALUES}"
        )
    assert isinstance(result, dict)
    return result


def _strict(node: Any, path: str, depth: int, *, in_union: bool, enums: list[int]) -> dict[str, Any]:
    where = clean(path or "/", 120)
    if not isinstance(node, dict):
        raise NotStrict(f"a boolean schema at {where} (strict mode needs a typed schema)")
    if depth > MAX_STRICT_DEPTH:
        raise NotStrict(f"it nests more than {MAX_STRICT_DEPTH} levels (at {where})")
    for key in node:
        if key not in STRICT_KEYWORDS:
            raise NotStrict(f"strict mode does not support {key!r} (at {where})")
    if "format" in node and node["format"] not in STRICT_FORMATS:
        raise NotStrict(f"strict mode does not support format {clean(node['format'], 40)!r} (at {where})")
    enums[0] += len(node.get("enum", ()))
    if any(isinstance(value, dict | list) for value in [*node.get("enum", ()), node.get("const")]):
        raise NotStrict(f"an enum or const of objects or arrays at {where}")
    out = dict(node)
    if _is_object(node):
        out.update(_strict_object(node, path, depth, in_union=in_union, enums=enums))
    if "items" in node:
        out["items"] = _strict(node["items"], f"{path}/items", depth + 1, in_union=in_union, enums=enums)
    elif _types(node) & {"array"}:
        raise NotStrict(f"an array without items at {where}")
    if "anyOf" in node:
        out["anyOf"] = [
            _strict(branch, f"{path}/anyOf/{index}", depth + 1, in_union=True, enums=enums)
            for index, branch in enumerate(node["anyOf"])
        ]
    return out


def _strict_object(
    node: dict[str, Any], path: str, depth: int, *, in_union: bool, enums: list[int]
) -> dict[str, Any]:
    where = clean(path or "/", 120)
    properties = node.get("properties")
    if not isinstance(properties, dict) or not properties:
        if node.get("additionalProperties", True) is not False:
            raise NotStrict(f"an object without declared properties at {where} (a free-form object)")
        properties = {}
    extra = node.get("additionalProperties", True)
    if isinstance(extra, dict):
        raise NotStrict(f"additionalProperties is a schema at {where} (a map of arbitrary keys)")
    required = set(node.get("required", ()))
    if undeclared := sorted(required - set(properties)):
        # Closed to undeclared keys, the model could never send what the server requires.
        raise NotStrict(
            f"the object at {where} requires {clean(undeclared[0], 40)!r}, which it does not declare"
        )
    out: dict[str, Any] = {}
    for name, sub in properties.items():
        at = f"{path}/properties/{name}"
        converted = _strict(sub, at, depth + 1, in_union=in_union, enums=enums)
        if name not in required:
            if in_union:
                # arguments.without_optional_nulls follows properties and items only.
                raise NotStrict(f"an optional property inside anyOf at {clean(at, 120)}")
            converted = _nullable(converted)
        out[name] = converted
    # Extra keys the server would take are simply not offered: the model keeps to the declared ones.
    return {"properties": out, "required": list(properties), "additionalProperties": False}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null: strict mode's way of saying "may be left out"."""
    kinds = _types(schema)
    if "null" in kinds or any(_types(branch) == {"null"} for branch in schema.get("anyOf", ())):
        return schema
    if "type" in schema and "const" not in schema and "anyOf" not in schema:
        out = dict(schema)
        kind = schema["type"]
        out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [schema, {"type": "null"}]}


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    return set(kind) if isinstance(kind, list) else set()


def _is_object(node: dict[str, Any]) -> bool:
    return "object" in _types(node) or "properties" in node
