"""Remote text is control-stripped and clipped before it reaches a message or report."""

from __future__ import annotations

from nr_llm.mcp.text import MESSAGE_LIMIT, NAME_LIMIT, clean


def test_control_and_format_characters_are_removed_and_line_breaks_become_spaces() -> None:
    """Escape sequences, NUL, bidi overrides vanish; newlines and tabs separate words."""
    assert clean("a\x1b[31mb\x00c\u202ed\ne\tf\r\ng") == "a[31mbcd e f g"


def test_long_text_is_clipped_with_an_ellipsis() -> None:
    """Text over the limit is cut to exactly the limit, ending in an ellipsis."""
    clipped = clean("x" * 1000)
    assert len(clipped) == MESSAGE_LIMIT == 200 and clipped.endswith("…")
    assert len(clean("y" * 1000, NAME_LIMIT)) == 100


def test_short_clean_text_is_unchanged() -> None:
    """Ordinary text, including non-ASCII letters, passes through."""
    assert clean("Grüße, 世界") == "Grüße, 世界"


def test_non_strings_are_rendered() -> None:
    """A number or None from a server becomes its text form."""
    assert clean(-32601) == "-32601" and clean(None) == "None"
