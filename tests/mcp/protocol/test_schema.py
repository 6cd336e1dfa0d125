import json
from typing import Any

import pytest

from nr_llm.mcp.protocol.schema import MAX_DEPTH, REFUSED, SchemaRefused, normalise_schema


def _obj(**extra):
    return {"type": "object", **extra}


def _refusal(schema) -> str:
    with pytest.raises(SchemaRefused) as info:
        normalise_schema(schema)
    return str(info.value)


def test_a_simple_schema_keeps_its_kept_keywords_unchanged():
    """type, description, properties, required and additionalProperties survive as they are."""
    schema = _obj(
        description="Echo",
        properties={"text": {"type": "string", "description": "what to echo"}},
        required=["text"],
        additionalProperties=False,
    )
    assert normalise_schema(schema) == schema


def test_annotations_that_constrain_nothing_are_dropped_at_every_level():
    """$schema, $comment, readOnly, deprecated and vendor keywords are removed, top level and nested;
    the validation keywords beside them stay."""
    schema = _obj(
        **{"$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": "c", "x-vendor": 1},
        properties={"when": {"type": "string", "format": "date", "readOnly": True, "deprecated": True}},
    )
    assert normalise_schema(schema) == _obj(properties={"when": {"type": "string", "format": "date"}})


def test_combinators_and_not_are_kept_and_normalised():
    """allOf/anyOf/oneOf/not are kept and their subschemas reduced the same way."""
    schema = _obj(
        anyOf=[{"required": ["a"], "$comment": "x"}, {"required": ["b"]}],
        allOf=[True],
        oneOf=[{"type": ["string", "null"]}],
        **{"not": {"required": ["c"]}},
    )
    assert normalise_schema(schema) == _obj(
        anyOf=[{"required": ["a"]}, {"required": ["b"]}],
        allOf=[True],
        oneOf=[{"type": ["string", "null"]}],
        **{"not": {"required": ["c"]}},
    )


@pytest.mark.parametrize("schema", [None, [], "object", 3])
def test_a_schema_that_is_not_an_object_is_refused(schema):
    """The input schema itself must be a JSON object."""
    assert "not a JSON object" in _refusal(schema)


@pytest.mark.parametrize("type_", [None, "array", ["object"], "Object"])
def test_top_level_type_must_be_object(type_):
    """Function calling takes an object of named arguments; anything else is refused."""
    schema = {"properties": {}} if type_ is None else {"type": type_}
    assert _refusal(schema) == 'input schema\'s top-level "type" must be "object"'


@pytest.mark.parametrize("keyword", REFUSED)
def test_each_refused_keyword_is_refused_at_the_top_level_with_its_name(keyword):
    """$ref, $defs, if/then/else, patternProperties... are refused, never resolved or dropped."""
    reason = _refusal(_obj(**{keyword: {}}))
    assert f"uses {keyword!r} at /" in reason
    assert "cannot be represented" in reason


@pytest.mark.parametrize("keyword", REFUSED)
def test_each_refused_keyword_is_refused_when_nested_with_its_place(keyword):
    """A refused keyword deep in a property is found, and the reason points at it."""
    reason = _refusal(_obj(properties={"a": {"type": "object", keyword: {}}}))
    assert f"uses {keyword!r} at /properties/a" in reason


def test_a_refused_keyword_inside_a_dropped_keyword_is_still_refused():
    """Dropping a vendor keyword must not quietly drop a $dynamicRef the schema depended on."""
    schema = _obj(properties={"xs": {"type": "array", "x-vendor": {"$dynamicRef": "#item"}}})
    assert "uses '$dynamicRef' at /properties/xs/x-vendor" in _refusal(schema)


def test_a_property_named_like_a_refused_keyword_is_only_a_name():
    """A property called "if" or "$ref" is a name, not a keyword, and is accepted."""
    schema = _obj(properties={"if": {"type": "string"}, "$ref": {"type": "string"}}, required=["if"])
    assert normalise_schema(schema) == schema


def test_refused_words_inside_data_are_data():
    """A default that is an object with a "$ref" key, or an enum of "if", is data, not a keyword."""
    schema = _obj(properties={"a": {"enum": ["if", "$ref"], "default": {"$ref": "x"}}})
    assert normalise_schema(schema) == schema


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (_obj(properties={"a": {"type": "text"}}), '"type" at /properties/a/type must be one of'),
        (_obj(properties={"a": {"type": []}}), '"type" at /properties/a/type must be one of'),
        (_obj(properties={"a": {"type": ["string", "string"]}}), "non-empty list of distinct ones"),
        (_obj(description=5), "'description' at /description is a number, not a string"),
        (_obj(properties=["a"]), '"properties" at /properties is an array, not an object'),
        (_obj(properties={"a": "string"}), "schema at /properties/a is a string, not an object or boolean"),
        (_obj(required="a"), '"required" at /required must be an array of distinct property names'),
        (_obj(required=["a", "a"]), '"required" at /required must be an array of distinct'),
        (_obj(required=[1]), '"required" at /required must be an array'),
        (_obj(additionalProperties="no"), "schema at /additionalProperties is a string"),
        (_obj(anyOf=[]), "'anyOf' at /anyOf must be a non-empty array of schemas"),
        (_obj(allOf={"type": "string"}), "'allOf' at /allOf must be a non-empty array"),
        (_obj(oneOf=[3]), "schema at /oneOf/0 is a number"),
        (_obj(**{"not": None}), "schema at /not is null"),
    ],
)
def test_retained_values_must_be_well_formed(schema, reason):
    """Each kept keyword's value is checked; a malformed one is refused with where and why."""
    assert reason in _refusal(schema)


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"n": schema}}
    return schema


def test_a_schema_twelve_levels_deep_is_accepted():
    """Twelve levels (the top level counts as one) is within the limit."""
    assert normalise_schema(_nested(MAX_DEPTH)) == _nested(MAX_DEPTH)


def test_a_schema_thirteen_levels_deep_is_refused():
    """One level more than twelve is refused with the limit in the reason."""
    assert "nested more than 12 levels deep" in _refusal(_nested(MAX_DEPTH + 1))


def test_depth_counts_in_dropped_keywords_too():
    """Excess nesting hidden under a dropped keyword is refused, not silently discarded."""
    deep: dict[str, Any] = {}
    for _ in range(MAX_DEPTH + 2):
        deep = {"items": deep}
    assert "nested more than 12 levels" in _refusal(_obj(properties={"a": deep}))


def test_a_schema_of_exactly_16_kib_encoded_is_accepted_and_one_byte_more_is_refused():
    """The size limit is 16384 bytes of compact UTF-8 JSON of the normalised schema."""
    base = json.dumps(_obj(properties={"": True}), separators=(",", ":")).encode()
    fits = _obj(properties={"p" * (16 * 1024 - len(base)): True})
    assert normalise_schema(fits) == fits
    reason = _refusal(_obj(properties={"p" * (16 * 1024 - len(base) + 1): True}))
    assert reason == "input schema is 16385 bytes encoded; at most 16384 (16 KiB) are accepted"


def test_size_is_measured_after_dropping_keywords():
    """A bulky comment that is dropped anyway does not count against the limit."""
    schema = _obj(**{"$comment": "x" * 40_000})
    assert normalise_schema(schema) == _obj()


def test_a_reason_shows_remote_property_names_without_control_characters():
    """A property name cannot inject a line break into the operator's report."""
    reason = _refusal(_obj(properties={"a\nb": {"$ref": "https://example.org/s.json"}}))
    assert "\n" not in reason
    assert "/properties/a b" in reason


def test_a_nul_character_in_a_property_name_is_refused():
    """PostgreSQL stores no NUL in JSON text, and a name is never rewritten: refused with the reason."""
    schema = _obj(properties={"a\x00": {"type": "string"}})
    assert _refusal(schema) == "input schema contains a NUL character, which cannot be stored"


@pytest.mark.parametrize("keyword", ["description", "title"])
def test_control_characters_in_prose_are_removed_at_any_depth(keyword):
    """Descriptions and titles are prose: a NUL, an escape or a bidi override is removed, not refused."""
    schema = _obj(**{keyword: "x\x00\x1b\u202ey"}, properties={"a": {keyword: "\x00b"}})
    assert normalise_schema(schema) == _obj(**{keyword: "xy"}, properties={"a": {keyword: "b"}})


def test_a_nul_in_a_dropped_keyword_does_not_refuse():
    """Only what is kept is stored: a NUL in a dropped "$comment" is dropped with it."""
    assert normalise_schema(_obj(**{"$comment": "x\x00"})) == _obj()
