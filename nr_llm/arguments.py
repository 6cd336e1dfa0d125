"""Check a tool call's arguments against the tool's stored input schema, before it is sent.

MCP input schemas are JSON Schema (2020-12 unless the schema says otherwise). Checking
here gives the operator the server's own rule, in words, without spending a call; remote
``$ref`` targets are never fetched (jsonschema does not retrieve them by default).
"""

from __future__ import annotations

import copy
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

MAX_PROBLEMS = 10


def argument_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Every way ``arguments`` breaks ``schema``, as short sentences; empty when it is valid."""
    validator_class = validator_for(schema, default=Draft202012Validator)
    try:
        validator_class.check_schema(schema)
    except SchemaError as exc:
        return [f"The stored input schema is not valid JSON Schema ({exc.message}); re-import the catalogue."]
    errors = sorted(
        validator_class(schema).iter_errors(arguments), key=lambda error: [str(part) for part in error.path]
    )
    problems = [f"{_where(list(error.path))}: {error.message}" for error in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"… and {len(errors) - MAX_PROBLEMS} more.")
    return problems


def _where(path: list[str | int]) -> str:
    return "/".join(str(part) for part in path) if path else "arguments"


#: What a required property starts as on the Try page, by its schema type: the right type, and
#: visibly a blank to fill in (a made-up value could be run by mistake and mean something).
_BLANKS: dict[str, Any] = {
    "string": "",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "null": None,
}
MAX_TEMPLATE_DEPTH = 6


def argument_template(schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The arguments an operator starts from: every required property, with a typed blank.

    Nested objects get their own required properties; a property whose type is a list or a
    union takes its first alternative. Only the stored (normalised) schema is read.
    """
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    return {name: _blank(properties.get(name), depth + 1) for name in required if isinstance(name, str)}


def _blank(schema: Any, depth: int) -> Any:
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), kind[0] if kind else None)
    if kind is None:
        for union in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(union)
            if isinstance(branches, list) and branches:
                return _blank(branches[0], depth)
    if kind == "object":
        return argument_template(schema, depth) if depth < MAX_TEMPLATE_DEPTH else {}
    return copy.copy(_BLANKS.get(kind)) if isinstance(kind, str) else None
