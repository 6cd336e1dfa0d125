"""Check a tool call's arguments against the tool's stored input schema, before it is sent.

One implementation for ``execute()`` and the admin's Try page. MCP input schemas are JSON
Schema (2020-12 unless the schema says otherwise); local references (``#/$defs/...``) are
resolved within the schema, and a network ``$ref`` is never fetched (jsonschema's registry
retrieves nothing, the normaliser refuses them, and one edited into a stored schema refuses the
call). A recursive schema meets an argument nested deeper than Python's stack at its own limit:
such a call is refused, not sent unchecked.

Bounded in time: a ``pattern`` comes from a server and the string it is matched against from
a model, and Python's ``re`` backtracks without limit (``(x+x+)+y`` on forty x's runs for
hours). Patterns are therefore matched by the ``regex`` engine with a timeout taken from one
budget for the whole check (``CHECK_SECONDS``), and the import refused patterns whose nested
repeats would make even compiling them slow (``nr_llm/mcp/protocol/schema.py``). A check that runs out
of budget refuses the call: it was not shown to be valid, so it is not sent.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import regex
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError, UnknownType, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from referencing.exceptions import Unresolvable

from ..mcp import ReferenceProblem, clean, resolve_reference

MAX_PROBLEMS = 10
#: Characters of one problem as a model or an operator reads it (a message quotes the value).
PROBLEM_CHARS = 300
#: The whole check's budget. Matching is cut at it, a little late (the engine looks at its clock
#: between steps: a 1 s budget ended after 1.5-1.9 s on a catastrophic pattern).
CHECK_SECONDS = 1.0
#: Formats checked: those jsonschema decides from the text alone, without optional packages.
#: Any other ``format`` is offered to the model as a hint and left to the server to judge.
CHECKED_FORMATS = ("date", "email", "ipv4", "ipv6", "uuid")


class _OutOfTime(Exception):
    pass


#: The running check's deadline and clock, read by the ``pattern`` keyword (one class for all checks).
_BUDGET: contextvars.ContextVar[tuple[float, Callable[[], float]]] = contextvars.ContextVar("nr_llm_check")
_FORMATS = FormatChecker(CHECKED_FORMATS)


def argument_problems(
    schema: dict[str, Any],
    arguments: dict[str, Any],
    *,
    seconds: float = CHECK_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> list[str]:
    """Every way ``arguments`` breaks ``schema``, as short sentences; empty when it is valid."""
    validator_class = validator_for(schema, default=Draft202012Validator)
    encoded = json.dumps(schema, sort_keys=True)
    if reason := _schema_problem(validator_class, encoded):
        return [f"The stored input schema is not valid JSON Schema ({reason}); re-import the catalogue."]
    validator = _validator(validator_class, encoded)
    token = _BUDGET.set((clock() + seconds, clock))
    try:
        errors = sorted(
            validator.iter_errors(arguments), key=lambda error: [str(part) for part in error.path]
        )
    except _OutOfTime:
        return [
            f"the arguments could not be checked against the input schema within {seconds:g} s "
            "(a pattern took too long to match); the call was not sent"
        ]
    except Unresolvable as exc:
        return [
            f"The stored input schema has a $ref that cannot be resolved within it ({clean(str(exc), 120)}); "
            "references are never fetched. Re-import the catalogue."
        ]
    except RecursionError:
        return ["the arguments are nested too deeply to be checked against the input schema"]
    finally:
        _BUDGET.reset(token)
    problems = [clean(f"{_where(list(error.path))}: {error.message}", PROBLEM_CHARS) for error in errors]
    if len(problems) > MAX_PROBLEMS:
        return [*problems[:MAX_PROBLEMS], f"… and {len(problems) - MAX_PROBLEMS} more."]
    return problems


@functools.lru_cache(maxsize=512)
def _schema_problem(validator_class: Any, encoded: str) -> str:
    """Why the schema is not valid JSON Schema, or "": checked once per schema, not per call
    (checking a schema against the metaschema costs a thousand times the call's own check)."""
    try:
        validator_class.check_schema(json.loads(encoded))
    except SchemaError as exc:
        return clean(exc.message)
    return ""


@functools.lru_cache(maxsize=512)
def _validator(validator_class: Any, encoded: str) -> Any:
    """The checking validator of a schema, built once per schema (it holds nothing of a check:
    the pattern budget is the running check's, in a context variable)."""
    return _bounded(validator_class)(json.loads(encoded), format_checker=_FORMATS)


@functools.cache
def _bounded(validator_class: Any) -> Any:
    """``validator_class`` with its ``pattern`` keyword matched within the running check's budget."""
    return extend(validator_class, {"pattern": _bounded_pattern})  # type: ignore[no-untyped-call]


def _bounded_pattern(
    validator: Validator, pattern: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """jsonschema's ``pattern`` keyword, matched with what is left of the check's budget."""
    if not validator.is_type(instance, "string"):
        return
    deadline, clock = _BUDGET.get()
    left = deadline - clock()
    if left <= 0:
        raise _OutOfTime
    try:
        found = regex.search(pattern, instance, timeout=left)
    except TimeoutError:
        raise _OutOfTime from None
    except regex.error:
        # A schema edited by hand past the import's check: the call cannot be shown valid.
        yield ValidationError(f"the schema's pattern {pattern!r} cannot be matched")
        return
    if found is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _where(path: list[str | int]) -> str:
    return "/".join(str(part) for part in path) if path else "arguments"


def checked_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The arguments to send and ``[]``, or the problems that keep the call from being sent.

    A ``null`` for an optional property whose schema does not accept null is read as "not
    given" first: that is how OpenAI's strict mode spells an optional argument
    (``nr_llm/tools/strict.py``), and the server's schema would refuse the null.
    """
    validator_class = validator_for(schema, default=Draft202012Validator)
    if _schema_problem(validator_class, json.dumps(schema, sort_keys=True)):
        return arguments, argument_problems(schema, arguments)
    restored = without_optional_nulls(schema, arguments)
    return restored, argument_problems(schema, restored)


def without_optional_nulls(schema: Any, value: Any, root: Any = None) -> Any:
    """``value`` less each ``null`` given for an optional property that does not accept null.

    ``root``: the whole schema, against which a local ``$ref`` in a subschema resolves.
    """
    root = schema if root is None else root
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return value
        listed = schema.get("required")
        required = listed if isinstance(listed, list) else []
        kept: dict[str, Any] = {}
        for name, item in value.items():
            sub = properties.get(name)
            if item is None and name not in required and sub is not None and not _accepts_null(sub, root):
                continue
            kept[name] = without_optional_nulls(sub, item, root)
        return kept
    if isinstance(value, list):
        given = schema.get("prefixItems")
        prefix = given if isinstance(given, list) else []
        items = schema.get("items")
        return [
            without_optional_nulls(prefix[index] if index < len(prefix) else items, item, root)
            for index, item in enumerate(value)
        ]
    return value


def _accepts_null(schema: Any, root: Any) -> bool:
    try:
        validator = Draft202012Validator(root if isinstance(root, dict) else schema)
        return bool(validator.evolve(schema=schema).is_valid(None))
    except (SchemaError, UnknownType, Unresolvable, RecursionError, TypeError, ValueError):
        return False


def refusal_text(tool_name: str, problems: list[str]) -> str:
    """What a model reads for a call that was not sent: which argument is wrong and why."""
    return (
        f"the arguments for {clean(tool_name)!r} do not match its input schema, so the call was not "
        f"sent: {'; '.join(problems)}. Correct them and call it again."
    )


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


def argument_template(
    schema: dict[str, Any], depth: int = 0, root: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The arguments an operator starts from: every required property, with a typed blank.

    Nested objects get their own required properties; a property whose type is a list or a
    union takes its first alternative; a local ``$ref`` is followed (a recursive model stops
    at the depth limit). Only the stored (normalised) schema is read.
    """
    root = schema if root is None else root
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    return {name: _blank(properties.get(name), depth + 1, root) for name in required if isinstance(name, str)}


def _blank(schema: Any, depth: int, root: dict[str, Any]) -> Any:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < MAX_TEMPLATE_DEPTH:
        try:
            target = resolve_reference(root, schema["$ref"])
        except ReferenceProblem:
            return None
        return _blank(target, depth + 1, root)
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), kind[0] if kind else None)
    if kind is None:
        for union in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(union)
            if isinstance(branches, list) and branches:
                return _blank(branches[0], depth, root)
    if kind == "object":
        return argument_template(schema, depth, root) if depth < MAX_TEMPLATE_DEPTH else {}
    return copy.copy(_BLANKS.get(kind)) if isinstance(kind, str) else None
