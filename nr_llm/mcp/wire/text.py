"""Remote text made safe to show and to store.

A server's name, version or error message reaches log lines, admin pages and exception
text; a hostile one must not inject line breaks, escape sequences or bidi overrides, nor
flood a report (``clean``).

Whatever a server sends must also be text Python can encode: JSON's ``\\ud83d`` escape, from a
JavaScript server cutting a string between the two halves of an emoji, decodes to a lone
surrogate that no UTF-8 encoder accepts, and would fail wherever the text is next written
(the ledger's encryption, a provider's request). ``loads`` replaces each one where answers are
decoded; ``encodable`` does it for text from anywhere else.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MESSAGE_LIMIT = 200
NAME_LIMIT = 100
REPLACEMENT = "\ufffd"

# json.loads joins a valid pair of escapes into one code point: a surrogate left in its
# output is a lone one, the only kind of code point UTF-8 cannot encode.
_SURROGATE = re.compile("[\ud800-\udfff]")
# JSON's escape of one (\uD800-\uDFFF): a literal prefix, so one fast pass.
_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def clean(value: object, limit: int = MESSAGE_LIMIT) -> str:
    """``value`` as one line of printable text of at most ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    kept: list[str] = []
    for char in text:
        category = unicodedata.category(char)
        if char in "\t\n\r\x0b\x0c" or category in ("Zl", "Zp"):
            kept.append(" ")  # a line break separated words; keep them apart
        elif category[0] != "C":  # Cc control, Cf format (bidi), Cs, Co, Cn
            kept.append(char)
    flat = " ".join("".join(kept).split())
    if len(flat) <= limit:
        return flat
    return flat[: limit - 1] + "…"


def encodable(text: str) -> str:
    """``text`` with every code point UTF-8 cannot encode (a lone surrogate) replaced by U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text)


def loads(raw: str | bytes) -> Any:
    """``json.loads``, every string of the value (keys too) ``encodable``.

    Raises what ``json.loads`` raises. The value is walked only when ``raw`` could hold a
    surrogate, so an ordinary answer costs a few substring searches (bench/decode.py)."""
    value = json.loads(raw)
    return _encodable_value(value) if _may_hold_surrogates(raw) else value


def _may_hold_surrogates(raw: str | bytes) -> bool:
    """What can decode to a surrogate: a ``\\uD800``-``\\uDFFF`` escape, one already in the
    text, or bytes json.loads decodes with "surrogatepass" (UTF-8's ED lead byte). A body with no
    backslash is not searched for escapes; a false alarm (Hangul's ED bytes) only costs the walk."""
    if isinstance(raw, bytes):
        # JSON in UTF-16 or UTF-32 (json.loads detects it by its NUL bytes) is walked anyway.
        if b"\x00" in raw[:4] or b"\xed" in raw:
            return True
        return b"\\" in raw and _ESCAPE_BYTES.search(raw) is not None
    if "\\" in raw and _ESCAPE.search(raw) is not None:
        return True
    return not raw.isascii() and _SURROGATE.search(raw) is not None


def _encodable_value(value: Any) -> Any:
    if isinstance(value, str):
        return value if value.isascii() else encodable(value)
    if isinstance(value, list):
        return [_encodable_value(item) for item in value]
    if isinstance(value, dict):
        return {encodable(key): _encodable_value(item) for key, item in value.items()}
    return value
