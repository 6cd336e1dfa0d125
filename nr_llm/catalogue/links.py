"""Where a server's URI becomes a link in HTML: a dangerous scheme is never an href.

Everywhere else a URI is an identifier and kept as sent (content.py); only here, where a browser
would follow it, are ``javascript:``, ``data:`` and ``vbscript:`` (however spelt: browsers ignore
case, tabs and newlines in a scheme) rendered inert, as no link at all.
"""

from __future__ import annotations

import re

_INERT = ("javascript:", "data:", "vbscript:")
_BLANKS = re.compile(r"[\s\x00-\x1f]")


def safe_href(uri: str) -> str:
    """``uri`` when a link to it is harmless, else "" (the template then shows it as text)."""
    scheme = _BLANKS.sub("", uri[:64]).lower()
    return "" if scheme.startswith(_INERT) else uri
