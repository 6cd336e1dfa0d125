"""A model turn's tool calls as the providers send them, read into one shape.

Accepted, as dicts or as the SDKs' objects (attributes or ``model_dump()``):

- ``(name, arguments)`` pairs;
- OpenAI Chat Completions ``message.tool_calls[i]``: ``{"id", "type": "function",
  "function": {"name", "arguments": "<JSON text>"}}``;
- OpenAI Responses ``{"type": "function_call", "call_id", "name", "arguments": "<JSON text>"}``;
- Anthropic ``{"type": "tool_use", "id", "name", "input": {...}}``.

Nothing here refuses a call for what it asks: a name that is not a string, or arguments that
are not JSON, go on to ``execute()``, which refuses them with a ledger row like any other
call. Only what is not a tool call at all is marked (``problem``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..mcp import clean


@dataclass(frozen=True)
class TurnCall:
    #: The provider's id for the call (its result message must carry it); None for a pair.
    id: str | None
    name: object
    # The model's arguments: out of repr, as the ledger keeps them (a frame's locals in a report).
    arguments: object = field(repr=False)
    #: Why this is not a tool call at all ("" when it is one).
    problem: str = ""


def read_call(item: object) -> TurnCall:
    if isinstance(item, tuple | list):
        if len(item) != 2:
            return TurnCall(None, "", None, "a (name, arguments) pair has two items")
        return TurnCall(None, item[0], _arguments(item[1]))
    data = _as_data(item)
    function = _get(data, "function")
    if function is not None:
        arguments = _arguments(_get(function, "arguments"))
        return TurnCall(_id(_get(data, "id")), _get(function, "name"), arguments)
    kind = _get(data, "type")
    if kind == "function_call" or _get(data, "call_id") is not None:
        return TurnCall(_id(_get(data, "call_id")), _get(data, "name"), _arguments(_get(data, "arguments")))
    if kind == "tool_use" or _get(data, "input") is not None:
        return TurnCall(_id(_get(data, "id")), _get(data, "name"), _arguments(_get(data, "input")))
    return TurnCall(
        None,
        "",
        None,
        f"{clean(type(item).__name__, 60)} is not a tool call (a (name, arguments) pair, an OpenAI "
        "tool call or function_call, or an Anthropic tool_use block)",
    )


def _as_data(item: object) -> object:
    dump = getattr(item, "model_dump", None)
    if callable(dump):  # a pydantic object of an SDK: its fields as the API sent them
        try:
            return dump()
        except Exception:  # not the SDK's model_dump after all; read its attributes
            return item
    return item


def _get(data: object, key: str) -> Any:
    if isinstance(data, dict):
        return data.get(key)
    return getattr(data, key, None)


def _id(value: object) -> str | None:
    return None if value is None else str(value)


def _arguments(value: object) -> object:
    """A provider's JSON text parsed; what is not JSON goes on as it is (``execute`` refuses it)."""
    if value is None or value == "":
        return {}
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return _as_data(value)
