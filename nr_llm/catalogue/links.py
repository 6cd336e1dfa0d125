"""Render a server's URI as a link only when its scheme is harmless."""

from __future__ import annotations

import re

_INERT = ("javascript:", "data:", "vbscript:")
_BLANKS = re.compile(r"[\s\x00-\x1f]")


def safe_href(uri: str) -> str:
    """``uri``, or "" to show it as text; browsers ignore case and blanks in a scheme."""
    scheme = _BLANKS.sub("", uri[:64]).lower()
    return "" if scheme.startswith(_INERT) else uri
