"""Every validation keyword the providers accept is kept at every depth; what cannot be carried, or
breaks a cap, is refused with the reason; hostile schemas stay bounded."""

from __future__ import annotations

import time
from typing import Any

import pytest

from nr_llm.mcp.protocol.schema import (
    MAX_ENUM_VALUES,
    MAX_EXAMPLES,
    MAX_PATTERN,
    MAX_REPEAT_EXPANSION,
    SchemaRefused,
    normalise_schema,
)

#: One schema per kept keyword, each valid on its own.
KEPT_EXAMPLES: list[dict[str, Any]] = [
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
    {"enum": ["open", "closed", "all"]},
    {"enum": [1, 2, 3]},
    {"enum": ["a", 1, True, None, {"op": "eq"}, [1, 2]]},
    {"const": "section"},
    {"type": "number", "minimum": 0, "maximum": 100},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5},
    {"type": "number", "multipleOf": 0.5},
    {"type": "string", "minLength": 1, "maxLength": 64},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"type": "string", "format": "date-time"},
    {"type": "array", "minItems": 1, "maxItems": 5, "uniqueItems": True},
    {"type": "object", "minProperties": 1, "maxProperties": 3},
    {"type": "integer", "default": 30},
    {"type": "string", "title": "Owner"},
    {"type": "string", "examples": ["octocat"]},
    {"type": ["string", "null"]},
    {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    {"oneOf": [{"const": 1}, {"const": 2}]},
    {"allOf": [{"type": "string"}, {"not": {"const": ""}}]},
    {"type": "object", "additionalProperties": {"type": "integer", "maximum": 9}},
]


def _places(inner: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``inner`` placed at each depth a schema may hold one."""
    return [
        ("properties", {"type": "object", "properties": {"x": inner}}),
        ("items", {"type": "object", "properties": {"x": {"type": "array", "items": inner}}}),
        ("prefixItems", {"type": "object", "properties": {"x": {"type": "array", "prefixItems": [inner]}}}),
        ("anyOf", {"type": "object", "properties": {"x": {"anyOf": [inner, {"type": "null"}]}}}),
        ("oneOf", {"type": "object", "properties": {"x": {"oneOf": [inner]}}}),
        ("allOf", {"type": "object", "allOf": [{"properties": {"x": inner}}]}),
        ("additionalProperties", {"type": "object", "additionalProperties": inner}),
        (
            "deep",
            {
                "type": "object",
                "properties": {
                    "a": {"type": "array", "items": {"type": "object", "properties": {"b": inner}}}
                },
            },
        ),
    ]


@pytest.mark.parametrize(
    ("inner", "where", "schema"),
    [(inner, where, schema) for inner in KEPT_EXAMPLES for where, schema in _places(inner)],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_each_kept_keyword_survives_at_each_depth(inner, where, schema):
    """The normalised schema equals the server's: nothing dropped, nothing changed, at any depth."""
    assert normalise_schema(schema) == schema


@pytest.mark.parametrize(
    ("nullable", "expected"),
    [
        ({"type": "integer", "nullable": True}, {"type": ["integer", "null"]}),
        ({"type": ["string", "null"], "nullable": True}, {"type": ["string", "null"]}),
        ({"type": "string", "nullable": False}, {"type": "string"}),
        ({"nullable": True, "description": "any"}, {"description": "any"}),
    ],
)
def test_openapi_nullable_is_said_as_null_in_the_type(nullable, expected):
    """OpenAPI 3.0's nullable (FastAPI, pydantic v1) becomes 2020-12's "null" type, which providers read."""
    schema = {"type": "object", "properties": {"x": nullable}}
    assert normalise_schema(schema)["properties"]["x"] == expected


def _refused(inner: dict[str, Any]) -> str:
    with pytest.raises(SchemaRefused) as info:
        normalise_schema({"type": "object", "properties": {"x": {"type": "array", "items": inner}}})
    return str(info.value)


@pytest.mark.parametrize(
    ("inner", "reason"),
    [
        ({"enum": []}, '"enum" at /properties/x/items/enum must be a non-empty array'),
        ({"enum": [{"a": "b\x1b"}]}, "/items/enum/0/a contains control or format characters"),
        ({"const": ["x" * 3000]}, "more than 2000 bytes encoded"),
        ({"enum": ["ok", "bad\x1b[31m"]}, "/items/enum/1 contains control or format characters"),
        ({"const": "x" * 501}, "longer than 500 characters"),
        ({"minimum": "1"}, "'minimum' at /properties/x/items/minimum must be a number"),
        ({"exclusiveMinimum": True}, "draft-04's boolean form is not 2020-12"),
        ({"multipleOf": 0}, "must be greater than 0"),
        ({"maxLength": -1}, "'maxLength' at /properties/x/items/maxLength must be a non-negative integer"),
        ({"minItems": 1.5}, "must be a non-negative integer"),
        ({"uniqueItems": "yes"}, "must be a boolean"),
        ({"pattern": "(unclosed"}, "is not a regular expression Python reads"),
        ({"pattern": 5}, "not a string"),
        ({"format": "date time\n"}, "must be a format name"),
        ({"items": [{"type": "string"}]}, "the draft-07 tuple form"),
        ({"prefixItems": []}, "must be a non-empty array of schemas"),
        ({"nullable": "yes"}, '"nullable" at /properties/x/items/nullable must be a boolean'),
        ({"default": "x" * 3000}, "more than 2000 bytes encoded"),
        ({"examples": "x"}, "must be an array"),
        ({"minimum": float("nan")}, "NaN or infinity"),
        ({"contains": {"type": "string"}}, "uses 'contains'"),
        ({"unevaluatedItems": False}, "uses 'unevaluatedItems'"),
    ],
)
def test_what_cannot_be_carried_is_refused_with_where_and_why(inner, reason):
    """Never weakened, never rewritten: a keyword that cannot be kept refuses the tool, naming it."""
    assert reason in _refused(inner)


def test_examples_are_clipped_to_a_few_short_ones():
    """Examples are hints: a long one or one PostgreSQL cannot store is left out, and at most
    MAX_EXAMPLES are kept, in order."""
    examples = ["x" * 600, "nul\x00", *[f"e{i}" for i in range(MAX_EXAMPLES + 3)]]
    schema = {"type": "object", "properties": {"x": {"type": "string", "examples": examples}}}
    assert normalise_schema(schema)["properties"]["x"]["examples"] == [f"e{i}" for i in range(MAX_EXAMPLES)]


def test_a_nested_description_is_clipped():
    """A description is prose a model reads on every request: clipped, never refused."""
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "d" * 5000}}}
    kept = normalise_schema(schema)["properties"]["x"]["description"]
    assert len(kept) == 2000 and kept.endswith("…")


def test_x_mcp_header_is_kept_for_the_transport():
    """An argument a 2026 server reads as a header keeps its annotation in the stored schema."""
    schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    assert normalise_schema(schema) == schema


# -- hostile schemas: refused or within the caps, quickly -------------------------------------


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"enum": [str(i) for i in range(MAX_ENUM_VALUES + 1)]}, f"at most {MAX_ENUM_VALUES}"),
        ({"type": "string", "pattern": "a" * 10_000_000}, f"longer than {MAX_PATTERN} characters"),
        ({"type": "string", "pattern": "((a{1000}){1000}){1000}"}, f"at most {MAX_REPEAT_EXPANSION}"),
        ({"enum": [1, "a", {"x": "\u202e"}]}, "contains control or format characters"),
    ],
    ids=["huge-enum", "10MB-pattern", "unrolling-pattern", "bidi-in-an-enum-object"],
)
def test_a_hostile_schema_is_refused_quickly(schema, reason):
    """Each is refused with its reason in well under a second (generous bound for a loaded machine)."""
    started = time.monotonic()
    with pytest.raises(SchemaRefused) as info:
        normalise_schema({"type": "object", "properties": {"x": schema}})
    assert reason in str(info.value)
    assert time.monotonic() - started < 2


def test_a_catastrophic_backtracking_pattern_is_kept_and_items_false_is_a_schema():
    """A pattern that backtracks catastrophically is a valid pattern: kept (its matching is bounded
    by nr_llm.tools.arguments); ``items: false`` (no items allowed) is a boolean schema, kept."""
    schema = {
        "type": "object",
        "properties": {
            "x": {"type": "string", "pattern": "^(a+)+$"},
            "none": {"type": "array", "items": False},
        },
    }
    assert normalise_schema(schema) == schema
