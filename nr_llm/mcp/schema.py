"""Normalise a remote tool's input schema into one every function-calling API accepts.

The rule is "refuse, never repair": a schema is either reduced to a small, well-formed
subset of JSON Schema or refused with a reason in words. Guessing what a ``$ref`` or an
``if``/``then`` meant would hand a model a contract the remote server never made.
"""

from __future__ import annotations

import json
from typing import Any

from .text import clean

#: The keywords kept, at every level; anything else (title, examples, format, ...) is dropped.
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
#: Keywords that make a schema depend on something this subset cannot express.
REFUSED = (
    "$ref",
    "$dynamicRef",
    "$defs",
    "definitions",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentSchemas",
    "dependentRequired",
    "unevaluatedProperties",
)
JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
MAX_DEPTH = 12
MAX_ENCODED_BYTES = 16 * 1024
# Values of these keywords are data, not schemas: a "$ref" inside an enum is just a string.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required", "type", "description"})
# Values of these keywords map names (remote-chosen, any string) to schemas.
_NAMED_SCHEMAS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


class SchemaRefused(ValueError):
    """The schema cannot be represented; the message is the reason an operator reads."""


def normalise_schema(schema: object) -> dict[str, Any]:
    """The kept subset of ``schema``, or ``SchemaRefused`` naming the rule and where it broke."""
    if not isinstance(schema, dict):
        raise SchemaRefused(f"input schema is {_kind(schema)}, not a JSON object")
    if schema.get("type") != "object":
        raise SchemaRefused('input schema\'s top-level "type" must be "object"')
    _scan(schema, "", 1)
    normalised = _normalise(schema, "")
    if contains_nul(normalised):
        raise SchemaRefused("input schema contains a NUL character, which cannot be stored")
    encoded = len(json.dumps(normalised, ensure_ascii=False, separators=(",", ":")).encode())
    if encoded > MAX_ENCODED_BYTES:
        raise SchemaRefused(
            f"input schema is {encoded} bytes encoded; at most {MAX_ENCODED_BYTES} (16 KiB) are accepted"
        )
    return normalised


def contains_nul(value: object) -> bool:
    """Whether a NUL is in any string of a JSON value, key or value: PostgreSQL stores none."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(key) or contains_nul(child) for key, child in value.items())
    if isinstance(value, list):
        return any(contains_nul(child) for child in value)
    return False


def _scan(node: dict[str, Any], path: str, depth: int) -> None:
    """Refuse a refused keyword or excess depth anywhere in the schema, kept part or not."""
    if depth > MAX_DEPTH:
        raise SchemaRefused(f"input schema is nested more than {MAX_DEPTH} levels deep (at {_where(path)})")
    for key, value in node.items():
        if key in REFUSED:
            raise SchemaRefused(
                f"input schema uses {key!r} at {_where(path)}, which cannot be represented "
                "(schemas are refused, never rewritten)"
            )
        if key in _DATA_KEYWORDS:
            continue
        if key in _NAMED_SCHEMAS and isinstance(value, dict):
            for name, child in value.items():
                if isinstance(child, dict):
                    _scan(child, f"{path}/{key}/{name}", depth + 1)
        elif isinstance(value, dict):
            _scan(value, f"{path}/{key}", depth + 1)
        elif isinstance(value, list):
            for index, child in enumerate(value):
                if isinstance(child, dict):
                    _scan(child, f"{path}/{key}/{index}", depth + 1)


def _normalise(node: dict[str, Any], path: str) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key in KEPT:
        if key not in node:
            continue
        value = node[key]
        at = f"{path}/{key}"
        if key == "type":
            kept[key] = _type(value, at)
        elif key == "description":
            if not isinstance(value, str):
                raise SchemaRefused(f'"description" at {_where(at)} is {_kind(value)}, not a string')
            kept[key] = value
        elif key == "properties":
            if not isinstance(value, dict):
                raise SchemaRefused(f'"properties" at {_where(at)} is {_kind(value)}, not an object')
            kept[key] = {name: _subschema(child, f"{at}/{name}") for name, child in value.items()}
        elif key == "required":
            kept[key] = _required(value, at)
        elif key in ("additionalProperties", "not"):
            kept[key] = _subschema(value, at)
        else:  # allOf, anyOf, oneOf
            if not isinstance(value, list) or not value:
                raise SchemaRefused(f"{key!r} at {_where(at)} must be a non-empty array of schemas")
            kept[key] = [_subschema(child, f"{at}/{index}") for index, child in enumerate(value)]
    return kept


def _subschema(value: object, path: str) -> Any:
    # JSON Schema allows true/false as schemas ("anything" / "nothing"); keep them as they are.
    if isinstance(value, bool):
        return value
    if not isinstance(value, dict):
        raise SchemaRefused(f"schema at {_where(path)} is {_kind(value)}, not an object or boolean")
    return _normalise(value, path)


def _type(value: object, path: str) -> str | list[str]:
    if isinstance(value, str) and value in JSON_TYPES:
        return value
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, str) and item in JSON_TYPES for item in value)
        and len(set(value)) == len(value)
    ):
        return list(value)
    raise SchemaRefused(
        f'"type" at {_where(path)} must be one of {", ".join(sorted(JSON_TYPES))} '
        "or a non-empty list of distinct ones"
    )


def _required(value: object, path: str) -> list[str]:
    if (
        isinstance(value, list)
        and all(isinstance(item, str) for item in value)
        and len(set(value)) == len(value)
    ):
        return list(value)
    raise SchemaRefused(f'"required" at {_where(path)} must be an array of distinct property names')


def _where(path: str) -> str:
    # A JSON Pointer into the remote schema; its property names are remote text.
    return clean(path or "/", 120)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
