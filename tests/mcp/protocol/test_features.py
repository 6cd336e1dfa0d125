"""Hostile answers to resources/read, prompts/get and completion/complete: capped or refused
with a note, typed errors, nothing else raised."""

from __future__ import annotations

import pytest

from nr_llm.mcp import McpTransportError
from nr_llm.mcp.protocol.features import (
    MAX_PROMPT_MESSAGES,
    completion_of,
    not_found,
    prompt_outcome,
    resource_outcome,
)


def test_a_blob_that_does_not_decode_is_dropped_with_a_note() -> None:
    outcome = resource_outcome(
        {"contents": [{"uri": "x://a", "blob": "not base64!"}, {"uri": "file:///a.txt", "text": "kept"}]}, "s"
    )
    assert outcome.content == ({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "kept"}},)
    assert outcome.notes == ("a resource block was dropped: its data is not valid base64",)


def test_a_fifty_megabyte_text_is_clipped_at_the_block_cap() -> None:
    outcome = resource_outcome({"contents": [{"uri": "x://big", "text": "x" * 50_000_000}]}, "s")
    assert len(outcome.content[0]["resource"]["text"]) == 1_048_576
    assert "clipped" in outcome.notes[0]


def test_contents_that_are_not_a_list_are_malformed() -> None:
    with pytest.raises(McpTransportError) as bad:
        resource_outcome({"contents": "nope"}, "s")
    assert bad.value.kind == "malformed"


def test_ten_thousand_prompt_messages_are_cut_with_a_note() -> None:
    messages = [{"role": "user", "content": {"type": "text", "text": "hi"}}] * 10_000
    outcome = prompt_outcome({"messages": messages}, "s")
    assert len(outcome.messages) == MAX_PROMPT_MESSAGES
    assert outcome.notes[0] == f"the prompt's 10000 messages were cut to the first {MAX_PROMPT_MESSAGES}"


def test_a_prompt_message_with_an_unknown_role_or_block_is_named() -> None:
    outcome = prompt_outcome(
        {
            "messages": [
                {"role": "system", "content": {"type": "text", "text": "x"}},
                {"role": "user", "content": {"type": "hologram"}},
            ]
        },
        "s",
    )
    assert outcome.messages == ()
    assert "role 'system' was not passed on" in outcome.notes[0]
    assert "type 'hologram'" in outcome.notes[1]


def test_completion_values_are_strings_and_at_most_a_hundred() -> None:
    completion = completion_of(
        {"completion": {"values": ["a", 1, *["v"] * 200], "total": 300, "hasMore": True}}, "s"
    )
    assert len(completion.values) == 99 and completion.values[0] == "a"
    assert (completion.total, completion.has_more) == (300, True)


@pytest.mark.parametrize(
    ("code", "data", "named"),
    [
        (-32002, None, True),
        (-32602, {"uri": "x://a"}, True),
        (-32602, {"uri": "x://other"}, False),
        (-32603, None, False),
    ],
)
def test_resource_not_found_is_named_for_both_codes(code: int, data: object, named: bool) -> None:
    error = McpTransportError("rpc_error", "s", "no", code=code, data=data)
    found = not_found(error, "x://a")
    assert (found is not None) == named
    if found is not None:
        assert found.kind == "resource_not_found" and "has no resource 'x://a'" in str(found)
