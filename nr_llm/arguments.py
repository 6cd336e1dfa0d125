"""Check a tool call's arguments against the tool's stored input schema, before it is sent.

MCP input schemas are JSON Schema (2020-12 unless the schema says otherwise). Checking
here gives the operator the server's own rule, in words, without spending a call; remote
``$ref`` targets are never fetched (jsonschema does not retrieve them by default).
"""

from __future__ import annotations

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
