"""Show arguments to an approver with every invisible or direction-changing character escaped
and named: ``invoice\\u202egpj.exe`` reads "invoiceexe.jpg". The digest approved is unchanged.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Letters and marks that render as nothing; variation selectors can carry hidden bytes.
_INVISIBLE = frozenset({0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0})
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))


def hidden(char: str) -> bool:
    if char == "\n":
        return False  # JSON's own indentation (a newline in a string is written \n)
    point = ord(char)
    return (
        unicodedata.category(char) in _HIDDEN_CATEGORIES
        or point in _INVISIBLE
        or any(low <= point <= high for low, high in _VARIATION_SELECTORS)
    )


def escape(char: str) -> str:
    point = ord(char)
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def name(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def pretty(value: Any) -> str:
    """``value`` as indented JSON (keys sorted), every hidden character escaped: for a terminal."""
    return "".join(escape(char) if hidden(char) else char for char in _dumps(value))


def hidden_in(value: Any) -> list[str]:
    return list(dict.fromkeys(char for char in _dumps(value) if hidden(char)))


def arguments_html(value: Any) -> SafeString:
    """Indented JSON with each hidden character escaped and marked, under a note naming them."""
    text = _dumps(value)
    found = list(dict.fromkeys(char for char in text if hidden(char)))
    body = _join(text, lambda char: format_html('<mark title="{}">{}</mark>', name(char), escape(char)))
    if not found:
        return format_html("<pre>{}</pre>", body)
    return format_html(
        '<p class="nr-llm-warning" role="note"><strong>{}</strong> {}</p><pre>{}</pre>',
        "Invisible or direction-changing characters, shown escaped and marked:",
        ", ".join(name(char) for char in found),
        body,
    )


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def _join(text: str, marked: Callable[[str], SafeString]) -> SafeString:
    runs: list[tuple[str, bool]] = []
    for char in text:
        concealed = hidden(char)
        if concealed or not runs or runs[-1][1]:
            runs.append((char, concealed))
        else:
            runs[-1] = (runs[-1][0] + char, False)
    return format_html_join("", "{}", ((marked(part) if concealed else part,) for part, concealed in runs))
