"""Arguments are checked against the tool's stored JSON Schema before anything is sent."""

from nr_llm.arguments import MAX_PROBLEMS, argument_problems
from nr_llm.forms import TryToolForm

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
