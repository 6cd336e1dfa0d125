"""Local references (``$ref``/``$defs``, as pydantic writes them) are kept whole and checked; what
would mean nothing or never finish is refused with its place, quickly, never weakened."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from nr_llm.mcp.protocol.references import MAX_CHAIN
from nr_llm.mcp.protocol.schema import MAX_NODES, SchemaRefused, normalise_schema


def _refusal(schema: Any) -> str:
    started = time.monotonic()
    with pytest.raises(SchemaRefused) as info:
        normalise_schema(schema)
    assert time.monotonic() - started < 5, "a refusal must never take long"
    return str(info.value)


def _obj(**fields: Any) -> dict[str, Any]:
    return {"type": "object", **fields}


PERSON = _obj(
    **{
        "$defs": {
            "Address": _obj(properties={"city": {"type": "string", "title": "City"}}, required=["city"]),
            "Person": _obj(
                properties={"name": {"type": "string"}, "address": {"$ref": "#/$defs/Address"}},
                required=["name", "address"],
            ),
        }
    },
    properties={"person": {"$ref": "#/$defs/Person"}},
    required=["person"],
)


def test_a_pydantic_schema_with_defs_is_kept_whole():
    """Nested models come back exactly as sent: the references and the root's $defs kept."""
    assert normalise_schema(PERSON) == PERSON


def test_a_recursive_model_is_kept():
    """A node whose children are nodes reaches a value at every turn: kept, not inlined."""
    node = _obj(
        properties={
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        }
    )
    schema = _obj(**{"$defs": {"Node": node}}, properties={"tree": {"$ref": "#/$defs/Node"}})
    assert normalise_schema(schema) == schema
    root_recursion = _obj(properties={"next": {"$ref": "#"}})
    assert normalise_schema(root_recursion) == root_recursion


def test_draft_07_definitions_and_pointers_into_properties_are_kept():
    """zod-to-json-schema writes "definitions" and "#/properties/..." pointers; both resolve locally."""
    schema = _obj(
        definitions={"Id": {"type": "string", "pattern": "^[a-z]+$"}},
        properties={"a": {"$ref": "#/definitions/Id"}, "b": {"$ref": "#/properties/a"}},
    )
    assert normalise_schema(schema) == schema


def test_validation_keywords_inside_definitions_are_checked_like_any_other():
    """A definition is a schema like any other: a malformed keyword there is refused with its place."""
    schema = _obj(**{"$defs": {"A": {"type": "string", "maxLength": -1}}})
    assert "/$defs/A/maxLength" in _refusal(schema)


def test_a_network_ref_is_refused_with_its_place_and_never_fetched():
    """Nothing is fetched; the reason names where the reference is and where it points."""
    reason = _refusal(_obj(properties={"doc": {"$ref": "https://schemas.example/doc.json#/x"}}))
    assert "/properties/doc/$ref points outside the schema" in reason
    assert "'https://schemas.example/doc.json#/x'" in reason and "never fetched" in reason


@pytest.mark.parametrize("ref", ["other.json", "#foo", "urn:x", "//host/x"])
def test_every_reference_that_is_not_a_local_pointer_is_refused(ref):
    """Relative files, anchors and URNs would all need a lookup the schema cannot give."""
    assert "points outside the schema" in _refusal(_obj(properties={"a": {"$ref": ref}}))


def test_a_ref_to_a_missing_definition_is_refused_with_its_place():
    reason = _refusal(_obj(properties={"a": {"$ref": "#/$defs/Gone"}}))
    assert reason == (
        "input schema cannot be kept: the $ref at /properties/a/$ref: '#/$defs/Gone' points to a place "
        "the schema does not define"
    )


def test_a_ref_into_a_dropped_keyword_is_refused_not_left_dangling():
    """A pointer into a vendor keyword (dropped) would point nowhere once stored: refused."""
    schema = _obj(**{"x-vendor": {"type": "string"}}, properties={"a": {"$ref": "#/x-vendor"}})
    assert "does not define" in _refusal(schema)


def test_a_cycle_through_several_definitions_is_refused_naming_the_places():
    """A is B, B is one of (C), C is A: a validator would follow it forever."""
    schema = _obj(
        **{
            "$defs": {
                "A": {"$ref": "#/$defs/B"},
                "B": {"anyOf": [{"$ref": "#/$defs/C"}]},
                "C": {"allOf": [{"$ref": "#/$defs/A"}]},
            }
        },
        properties={"a": {"$ref": "#/$defs/A"}},
    )
    reason = _refusal(schema)
    assert "form a cycle that never reaches a value" in reason
    for place in ("/$defs/A", "/$defs/B", "/$defs/C"):
        assert place in reason


def test_a_self_reference_in_place_is_refused():
    assert "cycle" in _refusal(_obj(**{"$defs": {"A": {"not": {"$ref": "#/$defs/A"}}}}))


def test_a_long_chain_of_references_is_refused():
    """References applied one after another to the same value are bounded (Python's stack is)."""
    defs = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(MAX_CHAIN + 1)}
    defs[f"D{MAX_CHAIN + 1}"] = {"type": "string"}
    reason = _refusal(_obj(**{"$defs": defs}, properties={"a": {"$ref": "#/$defs/D0"}}))
    assert f"chain more than {MAX_CHAIN} schemas" in reason


def test_ten_thousand_nested_references_are_refused_quickly():
    """10,000 definitions each referring to the next: refused for size before anything is followed."""
    defs: dict[str, Any] = {f"D{i}": {"$ref": f"#/$defs/D{i + 1}"} for i in range(10_000)}
    defs["D10000"] = {"type": "string"}
    reason = _refusal(_obj(**{"$defs": defs}, properties={"a": {"$ref": "#/$defs/D0"}}))
    assert f"more than {MAX_NODES} subschemas" in reason


def test_ten_thousand_levels_of_nesting_are_refused_quickly():
    """Nesting is bounded before it is walked: no recursion error, no hang."""
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        deep = {"$ref": "#/$defs/x", "items": deep}
    assert "nested more than 12 levels deep" in _refusal(_obj(properties={"a": deep}))


def test_a_defs_of_five_megabytes_is_refused_by_its_size():
    """Big definitions are refused by the size cap, not stored and not truncated into a weaker schema."""
    defs = {f"E{i}": {"type": "string", "enum": [f"{i}-" + "v" * 480]} for i in range(10_000)}
    schema = _obj(**{"$defs": defs})
    assert len(json.dumps(schema)) > 5_000_000
    assert "subschemas" in _refusal(schema) or "bytes encoded" in _refusal(schema)
    few = _obj(**{"$defs": {f"E{i}": {"enum": ["v" * 480]} for i in range(100)}})
    assert "bytes encoded; at most 16384" in _refusal(few)


def test_defs_below_the_root_are_refused():
    """Only the root's definitions are kept: a nested $defs would start a resolution scope of its own."""
    reason = _refusal(_obj(properties={"a": _obj(**{"$defs": {"X": {"type": "string"}}})}))
    assert reason == "input schema has '$defs' at /properties/a; only the root's definitions are kept"


def test_a_ref_that_is_not_a_string_is_refused():
    assert '"$ref" at /properties/a/$ref is a number, not a string' in _refusal(
        _obj(properties={"a": {"$ref": 3}})
    )


def test_escaped_pointer_tokens_resolve():
    """JSON Pointer's ~1 (/) and ~0 (~) and percent-encoding, as a definition named a/b~c needs."""
    schema = _obj(
        **{"$defs": {"a/b~c d": {"type": "integer"}}}, properties={"n": {"$ref": "#/$defs/a~1b~0c%20d"}}
    )
    assert normalise_schema(schema) == schema


def test_a_ref_into_data_is_refused():
    """An object inside a default is data: a $ref to it (which could loop back) is refused."""
    schema = _obj(
        properties={"a": {"default": {"$ref": "#/properties/a/default"}, "$ref": "#/properties/a/default"}}
    )
    assert "points into data, not to a schema" in _refusal(schema)
