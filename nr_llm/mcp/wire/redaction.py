"""Cut this installation's credentials out of text a server wrote: a careless server echoes
"invalid token <what you sent>", and that text reaches the admin, the ledger and the model."""

from __future__ import annotations

import re
from typing import Any

MASK = "[credential]"
QUERY_MASK = "[masked]"
_USERINFO = re.compile(r"(?<=://)[^/?#@]*@")
#: A clipped message may end in the start of a secret; a shorter one would hide innocent text.
MIN_PREFIX = 4


def redact(text: str, secret: str | None) -> str:
    """Mask ``secret``, and a clipped start of it before any "…"."""
    if not secret:
        return text
    pieces = text.replace(secret, MASK).split("…")
    for index, body in enumerate(pieces[:-1]):
        for length in range(min(len(secret) - 1, len(body)), MIN_PREFIX - 1, -1):
            if body.endswith(secret[:length]):
                pieces[index] = body[:-length] + MASK
                break
    return "…".join(pieces)


#: Shorter would garble innocent text, and a secret that short is no secret.
MIN_SECRET_CHARS = 8


class Secrets:
    """The credentials of one operation, as they become known (a refresh adds its tokens)."""

    def __init__(self) -> None:
        self._values: list[str] = []

    def __repr__(self) -> str:
        return f"Secrets({len(self._values)} held)"

    def add(self, value: str | None) -> None:
        if value and len(value) >= MIN_SECRET_CHARS and value not in self._values:
            self._values.append(value)
            self._values.sort(key=len, reverse=True)

    def mask(self, text: str) -> str:
        for secret in self._values:
            text = redact(text, secret)
        return text

    def mask_json(self, value: Any) -> Any:
        if not self._values:
            return value
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, list):
            return [self.mask_json(item) for item in value]
        if isinstance(value, dict):
            return {self.mask(key): self.mask_json(item) for key, item in value.items()}
        return value


def masked_url(url: str) -> str:
    """Mask query values and user-info, where URLs carry keys; parameter names stay readable."""
    url = _USERINFO.sub(f"{QUERY_MASK}@", url)
    base, question, rest = url.partition("?")
    if not question:
        return url
    query, hash_, fragment = rest.partition("#")
    fields = [f"{name}={QUERY_MASK}" if equals else QUERY_MASK for name, equals, _ in _pairs(query)]
    return f"{base}?{'&'.join(fields)}{hash_ and '#' + QUERY_MASK}"


def _pairs(query: str) -> list[tuple[str, str, str]]:
    return [field.partition("=") for field in query.split("&")] if query else []
