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
# What can decode to one: an escape (\uD800-\uDFFF), a surrogate already in the text, or
# bytes json.loads decodes with "surrogatepass" (UTF-8's ED A0-BF lead).
_MAY_DECODE_TO_SURROGATE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_MAY_DECODE_TO_SURROGATE_BYTES = re.compile(b"\\\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


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
    surrogate, so an ordinary answer costs one regular-expression scan."""
    value = json.loads(raw)
    if isinstance(raw, bytes):
        # JSON in UTF-16 or UTF-32 (json.loads detects it by its NUL bytes) is walked anyway.
        suspect = b"\x00" in raw[:4] or _MAY_DECODE_TO_SURROGATE_BYTES.search(raw) is not None
    else:
        suspect = _MAY_DECODE_TO_SURROGATE.search(raw) is not None
    return _encodable_value(value) if suspect else value


def _encodable_value(value: Any) -> Any:
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, list):
        return [_encodable_value(item) for item in value]
    if isinstance(value, dict):
        return {encodable(key): _encodable_value(item) for key, item in value.items()}
    return value
