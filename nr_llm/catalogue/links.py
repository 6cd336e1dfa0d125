"""Render a server's URI as a link only when its scheme is harmless (browsers ignore case and
blanks in a scheme)."""

from __future__ import annotations

import re

_INERT = ("javascript:", "data:", "vbscript:")
_BLANKS = re.compile(r"[\s\x00-\x1f]")


def safe_href(uri: str) -> str:
    """``uri`` when a link to it is harmless, else "" (the template then shows it as text)."""
    scheme = _BLANKS.sub("", uri[:64]).lower()
    return "" if scheme.startswith(_INERT) else uri
