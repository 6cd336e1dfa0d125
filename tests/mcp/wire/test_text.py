"""Remote text is control-stripped and clipped before it reaches a message or report."""

from __future__ import annotations

import json

from nr_llm.mcp.wire.text import MESSAGE_LIMIT, NAME_LIMIT, clean, encodable, loads


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


def test_a_lone_surrogate_is_dropped_from_clean_text() -> None:
    """Half of a UTF-16 pair is no printable character: clean drops it, the rest encodes."""
    assert clean("cut \ud83d here").encode() == b"cut here"


def test_encodable_replaces_lone_surrogates_and_keeps_everything_else() -> None:
    """Each lone surrogate becomes U+FFFD; an emoji, controls and bidi characters are left as they are."""
    assert encodable("a\ud83db\udc00c 😀 \u202e") == "a\ufffdb\ufffdc 😀 \u202e"


def test_loads_replaces_a_lone_surrogate_escape_anywhere_in_the_value() -> None:
    """JSON's lone \\ud83d escape, in a value or a key, at any depth, from text or bytes (also
    UTF-8's surrogate bytes, which json.loads lets through), decodes to encodable text."""
    raw = '{"k\\ud800": [{"text": "half \\ud83d"}], "pair": "\\ud83d\\ude00"}'
    for source in (raw, raw.encode(), b'["\xed\xa0\xbd"]'):
        value = loads(source)
        json.dumps(value, ensure_ascii=False).encode()  # raises on a surrogate left behind
    assert loads(raw) == {"k\ufffd": [{"text": "half \ufffd"}], "pair": "😀"}
    assert loads(b'["\xed\xa0\xbd"]') == ["\ufffd"]


def test_loads_returns_ordinary_json_as_json_loads_does() -> None:
    """Without a surrogate the value is json.loads' own."""
    raw = '{"a": [1, 2.5, null, true], "b": "Grüße \\u00e9"}'
    assert loads(raw) == json.loads(raw)
