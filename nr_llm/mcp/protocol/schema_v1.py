"""The input-schema rule before migration 0007, kept only to recognise pins made under it.

An enabled tool pinned under this rule stores what this rule kept, not what the server sent.
Its first import after the upgrade asks: would this rule, applied to what the server sends
now, give what was pinned? If so the server did not change the tool and it stays enabled
(``catalogue._pin``); a better normaliser is never mistaken for a server's change.
"""

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
    """What the first rule stored for ``schema``, which the current rule accepted.

    The current rule checks every value the first one checked, and refuses whatever the first
    one refused, so for such a schema the first rule's result was exactly this projection.
    """
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
