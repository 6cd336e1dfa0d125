"""Tool results: text joined, other blocks counted in a leading note, isError an outcome."""

from __future__ import annotations

import pytest

from nr_llm.mcp import CallOutcome, McpTransportError
from nr_llm.mcp.content import outcome_of


def test_text_blocks_are_joined_with_newlines() -> None:
    """Two text blocks become one text, separated by a newline."""
    result = {"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    assert outcome_of(result, "demo") == CallOutcome(text="one\ntwo", is_error=False)


def test_other_blocks_are_counted_by_protocol_type_names_in_a_leading_note() -> None:
    """image, audio, resource, resource_link and unknown types are counted; the note comes first."""
    result = {
        "content": [
            {"type": "text", "text": "caption"},
            {"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "image", "data": "", "mimeType": "image/png"},
            {"type": "audio", "data": "", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "x", "text": ""}},
            {"type": "resource_link", "uri": "x", "name": "x"},
            {"type": "hologram"},
            "not even a block",
        ]
    }
    outcome = outcome_of(result, "demo")
    assert outcome.text == (
        "[non-text content not shown: 1 audio, 2 image, 2 other, 1 resource, 1 resource_link]\ncaption"
    )


def test_only_non_text_blocks_give_only_the_note() -> None:
    """Without text the note is the whole text."""
    outcome = outcome_of({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]}, "demo")
    assert outcome.text == "[non-text content not shown: 1 image]"


def test_is_error_true_is_a_failed_outcome() -> None:
    """isError: true gives is_error=True with the text; anything but true is success."""
    assert (
        outcome_of({"content": [{"type": "text", "text": "boom"}], "isError": True}, "demo").is_error is True
    )
    assert outcome_of({"content": [], "isError": "yes"}, "demo").is_error is False


def test_structured_content_alone_is_rendered_as_json() -> None:
    """A result with no content blocks but structuredContent is shown as its JSON."""
    assert outcome_of({"content": [], "structuredContent": {"n": 1}}, "demo").text == '{"n": 1}'


def test_content_that_is_not_a_list_is_malformed() -> None:
    """content must be a list; otherwise 'malformed' naming the server."""
    with pytest.raises(McpTransportError) as caught:
        outcome_of({"content": "text"}, "demo")
    assert caught.value.kind == "malformed" and "'demo'" in str(caught.value)
