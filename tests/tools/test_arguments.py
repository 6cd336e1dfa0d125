"""Arguments are checked against the tool's stored JSON Schema before anything is sent."""

import json

from nr_llm.forms import TryToolForm
from nr_llm.tools.arguments import MAX_PROBLEMS, argument_problems, argument_template

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
    "required": ["text"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_problems():
    """Arguments that satisfy the schema pass."""
    assert argument_problems(SCHEMA, {"text": "hi", "count": 2}) == []


def test_each_violation_is_named_with_its_place():
    """A missing required key, a wrong type and an unknown key are each reported, with where."""
    problems = argument_problems(SCHEMA, {"count": "two", "extra": 1})
    assert "arguments: 'text' is a required property" in problems
    assert "count: 'two' is not of type 'integer'" in problems
    assert any("'extra' was unexpected" in problem for problem in problems)


def test_a_broken_stored_schema_is_reported_not_raised():
    """A stored schema that is not JSON Schema gives one clear sentence instead of an exception."""
    problems = argument_problems({"type": "no-such-type"}, {})
    assert len(problems) == 1
    assert problems[0].startswith("The stored input schema is not valid JSON Schema")


def test_many_problems_are_capped():
    """A flood of violations is cut to a readable list with a count of the rest."""
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    problems = argument_problems(schema, {f"k{i}": "x" for i in range(MAX_PROBLEMS + 5)})
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == "… and 5 more."


def test_form_refuses_text_that_is_not_json_and_keeps_it():
    """Invalid JSON is a field error with line and column; the typed text is kept for correction."""
    form = TryToolForm({"arguments": '{"text": '}, schema=SCHEMA)
    assert not form.is_valid()
    assert str(form.errors["arguments"][0]).startswith(
        "This is not valid JSON: Expecting value (line 1, column 10)"
    )
    assert "{&quot;text&quot;: </textarea>" in str(form["arguments"])


def test_form_refuses_json_that_is_not_an_object():
    """A JSON list or string is not a set of named arguments."""
    form = TryToolForm({"arguments": "[1, 2]"}, schema=SCHEMA)
    assert not form.is_valid()
    assert form.errors["arguments"] == ["The arguments must be a JSON object, e.g. {}."]


def test_form_reports_schema_violations_and_accepts_valid_arguments():
    """Schema violations are field errors; valid arguments come back as a dict."""
    bad = TryToolForm({"arguments": '{"count": 0}'}, schema=SCHEMA)
    assert not bad.is_valid()
    assert "arguments: 'text' is a required property" in bad.errors["arguments"]
    good = TryToolForm({"arguments": '{"text": "hello"}'}, schema=SCHEMA)
    assert good.is_valid()
    assert good.cleaned_data["arguments"] == {"text": "hello"}


def test_the_template_holds_every_required_property_with_a_typed_blank():
    """Required properties only, in the schema's order, each a blank of its type; nested objects
    get their own required properties; a list of types takes its first non-null one."""
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "tags": {"type": "array"},
            "where": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                "required": ["city"],
            },
            "maybe": {"type": ["null", "string"]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "optional": {"type": "string"},
        },
        "required": ["text", "count", "ratio", "loud", "tags", "where", "maybe", "either"],
    }
    template = argument_template(schema)
    assert template == {
        "text": "",
        "count": 0,
        "ratio": 0,
        "loud": False,
        "tags": [],
        "where": {"city": ""},
        "maybe": "",
        "either": 0,
    }
    assert list(template) == schema["required"]
    assert argument_template({"type": "object"}) == {}


def test_the_form_starts_from_the_template_in_a_box_sized_to_the_schema():
    """The box holds the template, with a row for each optional property and one spare; "{}"
    for a schema that requires nothing; never fewer than MIN_ROWS or more than MAX_ROWS rows."""
    form = TryToolForm(schema=SCHEMA)
    assert json.loads(form["arguments"].value()) == {"text": ""}
    # '{', '"text": ""', '}' + the optional "count" + one spare.
    assert form.fields["arguments"].widget.attrs["rows"] == 5
    assert TryToolForm(schema={"type": "object"})["arguments"].value() == "{}"
    assert (
        TryToolForm(schema={"type": "object"}).fields["arguments"].widget.attrs["rows"]
        == TryToolForm.MIN_ROWS
    )
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(40)}}
    assert TryToolForm(schema=wide).fields["arguments"].widget.attrs["rows"] == TryToolForm.MAX_ROWS


def test_a_check_that_outruns_its_budget_refuses_the_call():
    """The budget is one for the whole check, read from the clock given: once spent, the next
    pattern is not matched and the call is refused as not shown valid."""
    ticks = iter([0.0, 5.0])
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^a"}}}
    problems = argument_problems(schema, {"text": "a"}, seconds=1.0, clock=lambda: next(ticks))
    assert problems == [
        "the arguments could not be checked against the input schema within 1 s "
        "(a pattern took too long to match); the call was not sent"
    ]


def test_a_catastrophic_pattern_is_cut_at_the_budget():
    """(x+x+)+y on 5000 x's would run for ages under re: the check returns, cut at its budget."""
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "(x+x+)+y"}}}
    problems = argument_problems(schema, {"text": "x" * 5000}, seconds=0.3)
    assert "could not be checked" in problems[0]


def test_patterns_and_reliable_formats_are_checked_and_others_left_to_the_server():
    """pattern is checked; date, email, ipv4, ipv6 and uuid are; a format the validator cannot
    judge from the text alone (uri, date-time) is left to the server."""
    schema = {
        "type": "object",
        "properties": {
            "ref": {"type": "string", "pattern": "^e[0-9]+$"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "link": {"type": "string", "format": "uri"},
        },
    }
    problems = argument_problems(schema, {"ref": "x1", "day": "2026-13-45", "id": "nope", "link": "::"})
    assert problems == [
        "day: '2026-13-45' is not a 'date'",
        "id: 'nope' is not a 'uuid'",
        "ref: 'x1' does not match '^e[0-9]+$'",
    ]


def test_a_problem_quoting_a_huge_value_is_clipped():
    """A message quotes the value; a model-sized value is clipped to PROBLEM_CHARS."""
    from nr_llm.tools.arguments import PROBLEM_CHARS

    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}}}
    (problem,) = argument_problems(schema, {"text": "y" * 100_000})
    assert len(problem) == PROBLEM_CHARS and problem.startswith("text: 'yyy")


def test_a_null_is_read_as_not_given_only_where_the_server_would_refuse_it():
    """Dropped: a null for an optional property that does not accept null, at any depth. Kept: a
    null for a required property (a problem) and for one that accepts null."""
    from nr_llm.tools.arguments import checked_arguments

    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": ["string", "null"]},
            "c": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"d": {"type": "integer"}}}},
        },
        "required": ["c"],
    }
    arguments, problems = checked_arguments(schema, {"a": None, "b": None, "c": None, "items": [{"d": None}]})
    assert arguments == {"b": None, "c": None, "items": [{}]}
    assert problems == ["c: None is not of type 'string'"]
