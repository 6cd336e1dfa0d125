"""execute() checks arguments against the stored schema before anything is sent or held.

The ledger writes on a connection of its own, so these tests commit (``transaction=True``).
"""

from __future__ import annotations

import pytest

from nr_llm import tools
from nr_llm.models import McpTool
from tests.fakes import FakeClient
from tests.governance.helpers import guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_invalid_call_is_refused_before_the_approval_hold_and_never_sent():
    """On a server that requires approval, invalid arguments are refused at once (nothing awaits an
    approver), the text names the argument and the rule, the row says invalid_arguments."""
    guarded_tool(requires_approval=True)
    client = FakeClient()
    result = tools.execute("mcp_guarded_echo", {"text": 5}, client=client)
    assert (result.is_error, result.status) == (True, "failed")
    assert "text: 5 is not of type 'string'" in result.text
    row = row_of(result)
    assert (row.status, row.error_kind) == ("failed", "invalid_arguments")
    assert client.calls == []


def test_strict_modes_null_for_an_optional_argument_is_recorded_and_sent_as_not_given():
    """The ledger keeps, and the server receives, the arguments without the null an optional
    argument was given (strict mode's spelling of "not given")."""
    tool = guarded_tool(requires_approval=False)
    McpTool.objects.filter(pk=tool.pk).update(
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}, "lang": {"type": "string"}},
            "required": ["text"],
        }
    )
    client = FakeClient()
    result = tools.execute("mcp_guarded_echo", {"text": "hi", "lang": None}, client=client)
    assert not result.is_error, result.text
    assert client.calls == [("echo", {"text": "hi"})]


def test_a_catastrophic_pattern_on_model_input_is_bounded_and_never_raises():
    """A server pattern that backtracks catastrophically, matched against a long model-supplied
    string, ends at the check's budget as a refused call (the sentence names the cut; a match
    left to run would never return)."""
    tool = guarded_tool(requires_approval=False)
    McpTool.objects.filter(pk=tool.pk).update(
        input_schema={"type": "object", "properties": {"text": {"type": "string", "pattern": "(x+x+)+y"}}}
    )
    client = FakeClient()
    result = tools.execute("mcp_guarded_echo", {"text": "x" * 5000}, client=client)
    assert result.is_error and "could not be checked against the input schema within 1 s" in result.text
    assert row_of(result).error_kind == "invalid_arguments"
    assert client.calls == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"text": {"type": "no-such-type"}}},
        {"type": "object", "properties": {"text": {"type": "string", "pattern": "(unclosed"}}},
    ],
    ids=["unknown-type", "broken-pattern"],
)
def test_a_stored_schema_edited_into_garbage_refuses_the_call_and_never_raises(schema):
    """A schema edited by hand past the import's checks: the call is refused with a reason, not sent."""
    tool = guarded_tool(requires_approval=False)
    McpTool.objects.filter(pk=tool.pk).update(input_schema=schema)
    client = FakeClient()
    result = tools.execute("mcp_guarded_echo", {"text": None}, client=client)
    assert result.is_error and "not valid JSON Schema" in result.text
    assert row_of(result).error_kind == "invalid_arguments"
    assert client.calls == []
