"""The input-schema rule before migration 0007, kept so a tool pinned under it is not taken for
a changed tool: if this rule applied to what the server sends now gives the pin, it stays enabled."""

from __future__ import annotations

from typing import Any

#: What the first rule kept, at every level; it dropped everything else.
KEPT = (
    "type",
    "description",
    "properties",
    "required",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
)


def first_rule(schema: Any) -> Any:
    """What the first rule stored for a schema the current rule accepts: exactly this projection."""
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key in KEPT:
        if key not in schema:
            continue
        value = schema[key]
        if key == "properties" and isinstance(value, dict):
            kept[key] = {name: first_rule(child) for name, child in value.items()}
        elif key in ("additionalProperties", "not"):
            kept[key] = first_rule(value)
        elif key in ("allOf", "anyOf", "oneOf") and isinstance(value, list):
            kept[key] = [first_rule(child) for child in value]
        else:
            kept[key] = list(value) if isinstance(value, list) else value
    return kept
