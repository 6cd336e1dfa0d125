"""The ledger's preview of an answer: text and structured content within NR_LLM_TOOL_CALL_PREVIEW_CHARS."""

from __future__ import annotations

import json

import pytest

from nr_llm.governance import preview
from nr_llm.servers import credentials

pytestmark = pytest.mark.django_db


def _kept(text: str, structured: dict[str, object] | None) -> str:
    return credentials.decrypt(preview.preview(text, structured))


def test_structured_content_follows_the_text_pretty_printed(settings) -> None:
    """Both fit: the text, the heading, the structured content indented."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 500
    assert _kept("sunny", {"t": 33}) == 'sunny\n[structured content]\n{\n  "t": 33\n}'


def test_a_text_that_mirrors_the_structured_content_is_kept_once(settings) -> None:
    """A text that is the structured content's JSON is not kept twice: only the readable form."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 500
    assert _kept(json.dumps({"t": 33}), {"t": 33}) == '\n[structured content]\n{\n  "t": 33\n}'


@pytest.mark.parametrize("limit", [40, 64, 100, 500])
def test_both_stay_within_the_limit_and_the_text_takes_at_most_half(settings, limit) -> None:
    """A long text and long structured content share the limit; neither crowds the other out."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = limit
    kept = _kept("x" * 1000, {"rows": list(range(200))})
    text, _, structured = kept.partition(preview.STRUCTURED_HEADING)
    assert len(kept) <= limit
    assert (
        structured.startswith('{\n  "r') and len(text) <= (limit - len(preview.STRUCTURED_HEADING)) // 2 + 1
    )


def test_a_limit_of_zero_keeps_nothing(settings) -> None:
    """0 keeps no answer, structured or not."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 0
    assert preview.preview("text", {"a": 1}) == ""
