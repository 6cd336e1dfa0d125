"""Remote text made safe to show: control characters stripped, length clipped.

A server's name, version or error message reaches log lines, admin pages and exception
text; a hostile one must not inject line breaks, escape sequences or bidi overrides, nor
flood a report.
"""

from __future__ import annotations

import unicodedata

MESSAGE_LIMIT = 200
NAME_LIMIT = 100


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
