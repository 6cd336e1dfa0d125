"""Remote text made safe to show (one clean line) and to store (no lone surrogate, which a
JavaScript server can send and no UTF-8 encoder accepts)."""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

MESSAGE_LIMIT = 200
NAME_LIMIT = 100
REPLACEMENT = "\ufffd"

# json.loads joins valid pairs, so any surrogate left in its output is a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")
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
    """``json.loads`` with every string ``encodable``, walked only when ``raw`` could hold a
    surrogate, so an ordinary answer costs a few substring searches (bench/decode.py)."""
    value = json.loads(raw)
    return _encodable_value(value) if _may_hold_surrogates(raw) else value


def _may_hold_surrogates(raw: str | bytes) -> bool:
    """Cheap and may say yes wrongly (Hangul's ED bytes): a false alarm only costs the walk."""
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
