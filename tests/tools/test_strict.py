"""OpenAI strict mode: a schema it can express becomes a strict one with the same meaning for the
server; any other is refused with the reason (and offered non-strict by definitions())."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from nr_llm import tools
from nr_llm.tools.arguments import argument_problems, without_optional_nulls
from nr_llm.tools.strict import NotStrict, strict_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "owner": {"type": "string"},
        "state": {"type": "string", "enum": ["open", "closed"]},
        "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "since": {"type": "string", "format": "date-time"},
        "page": {"type": "integer", "minimum": 1},
        "filter": {
            "type": "object",
            "properties": {"author": {"type": "string"}, "bot": {"type": "boolean"}},
            "required": ["author"],
        },
        "kind": {"const": "issue"},
    },
    "required": ["owner"],
}


def test_every_property_is_required_and_the_optional_ones_accept_null():
    """Objects close (additionalProperties false) and require every property at every depth; an
    optional property accepts null besides its own values."""
    strict = strict_schema(SCHEMA)
    assert strict["additionalProperties"] is False
    assert strict["required"] == list(SCHEMA["properties"])
    assert strict["properties"]["owner"] == {"type": "string"}
    assert strict["properties"]["state"] == {"type": ["string", "null"], "enum": ["open", "closed", None]}
    assert strict["properties"]["page"] == {"type": ["integer", "null"], "minimum": 1}
    assert strict["properties"]["kind"] == {"anyOf": [{"const": "issue"}, {"type": "null"}]}
    inner = strict["properties"]["filter"]
    assert inner["type"] == ["object", "null"] and inner["required"] == ["author", "bot"]
    assert inner["properties"]["bot"] == {"type": ["boolean", "null"]}
    assert inner["additionalProperties"] is False


def test_what_a_strict_model_sends_is_read_back_as_the_servers_call():
    """Arguments valid under the strict schema, nulls for everything optional, become arguments the
    server's own schema accepts once the nulls are read as "not given"."""
    sent: dict[str, Any] = {
        "owner": "o",
        "state": None,
        "labels": None,
        "since": None,
        "page": None,
        "kind": None,
    }
    sent["filter"] = {"author": "a", "bot": None}
    assert Draft202012Validator(strict_schema(SCHEMA)).is_valid(sent)
    assert argument_problems(SCHEMA, sent) != []
    restored = without_optional_nulls(SCHEMA, sent)
    assert restored == {"owner": "o", "filter": {"author": "a"}}
    assert argument_problems(SCHEMA, restored) == []


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}},
            "does not support 'minLength'",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": {}, "uniqueItems": True}}},
            "does not support 'uniqueItems'",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "object"}}},
            "an object without declared properties",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "object", "additionalProperties": {"type": "string"}}},
            },
            "an object without declared properties",
        ),
        ({"type": "object", "properties": {"a": {"type": "array"}}}, "an array without items"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "requires 'b'"),
        ({"type": "object", "properties": {"a": True}}, "a boolean schema at /properties/a"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}, "format 'uri'"),
        ({"type": "object", "anyOf": [{"required": ["a"]}]}, "the root is an anyOf"),
        (
            {
                "type": "object",
                "properties": {"a": {"anyOf": [{"type": "object", "properties": {"b": {"type": "string"}}}]}},
            },
            "an optional property with no default inside anyOf",
        ),
    ],
)
def test_a_schema_strict_mode_cannot_express_is_refused_with_the_reason(schema, reason):
    """Never made "strict" by removing what the server asked for: the reason names the keyword and place."""
    with pytest.raises(NotStrict) as info:
        strict_schema(schema)
    assert reason in str(info.value)


def test_strict_mode_is_nested_at_most_ten_levels():
    """Eleven levels of objects is beyond what strict mode accepts."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(10):
        schema = {"type": "object", "properties": {"n": schema}, "required": ["n"]}
    with pytest.raises(NotStrict, match="more than 10 levels"):
        strict_schema(schema)


def test_strict_is_for_the_openai_formats():
    """Asking for strict Anthropic definitions is an error, not a silent non-strict answer."""
    with pytest.raises(ValueError, match="strict=True is for the OpenAI formats"):
        tools.definitions("anthropic", strict=True)


def test_annotations_do_not_make_a_tool_non_strict_and_defaults_are_required_without_null():
    """title is kept, default left out; a property with a default is required with its own type (the
    model sends the default or another value), as OpenAI's helper makes it."""
    schema = {
        "type": "object",
        "title": "greetArguments",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "shout": {"type": "boolean", "default": False, "title": "Shout"},
        },
        "required": ["name"],
    }
    assert strict_schema(schema) == {
        "type": "object",
        "title": "greetArguments",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "shout": {"type": "boolean", "title": "Shout"},
        },
        "required": ["name", "shout"],
        "additionalProperties": False,
    }


def test_definitions_are_made_strict_and_references_kept():
    """$defs are converted in place (closed, every property required) and $ref stays a reference."""
    schema = {
        "type": "object",
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "n": {"type": "integer", "default": 1}},
                "required": ["sku"],
            }
        },
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["items"],
    }
    strict = strict_schema(schema)
    assert strict["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    item = strict["$defs"]["Item"]
    assert item["required"] == ["sku", "n"] and item["additionalProperties"] is False
    assert item["properties"]["n"] == {"type": "integer"}


def test_a_ref_with_siblings_is_inlined_as_openais_helper_does():
    """Strict mode refuses keywords beside a $ref: the target is inlined with the siblings over it."""
    schema = {
        "type": "object",
        "$defs": {"Colour": {"type": "string", "enum": ["red", "green"], "title": "Colour"}},
        "properties": {"c": {"$ref": "#/$defs/Colour", "description": "The colour."}},
        "required": ["c"],
    }
    assert strict_schema(schema)["properties"]["c"] == {
        "type": "string",
        "enum": ["red", "green"],
        "title": "Colour",
        "description": "The colour.",
    }


def test_a_self_referring_ref_with_siblings_is_not_strict_rather_than_endless():
    """Inlining a $ref-with-siblings that leads back to itself would never end: refused with a reason."""
    schema = {
        "type": "object",
        "$defs": {"A": {"$ref": "#/$defs/A", "description": "again"}},
        "properties": {"a": {"$ref": "#/$defs/A", "description": "x"}},
        "required": ["a"],
    }
    with pytest.raises(NotStrict, match="refers back to itself|more than 10 levels"):
        strict_schema(schema)


def test_an_optional_property_without_default_in_a_definition_is_not_strict():
    """A null there could not be read back as "not given" (the definition may sit in a union)."""
    schema = {
        "type": "object",
        "$defs": {"P": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "required": ["p"],
    }
    with pytest.raises(NotStrict, match="optional property with no default inside anyOf or a definition"):
        strict_schema(schema)
