"""Take a server's credential back out of text the server wrote.

A careless server answers "invalid token <what you sent>"; that text becomes an import
error on the admin page, an admin message, a ledger row or a tool result a model reads. The
credentials are this installation's secrets, so the client cuts every one an operation holds
(``Secrets``: a configured credential, every OAuth access and refresh token) out of whatever
the server sent, where it enters: each decoded answer (results, errors, server info,
catalogues), and each error's message on its way out of the operation.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[credential]"
#: What stands for a query value (or a user-info) in a URL shown in a log line or a repr.
QUERY_MASK = "[masked]"
_USERINFO = re.compile(r"(?<=://)[^/?#@]*@")
#: A clipped message (text.clean adds "…") may end in the start of the secret; a prefix
#: shorter than this says too little to be worth masking and would hide innocent text.
MIN_PREFIX = 4


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret``, and a clipped start of it, masked (before
    any "…" clipping left: a clipped message may be followed by more of ours, "(code 1)")."""
    if not secret:
        return text
    pieces = text.replace(secret, MASK).split("…")
    for index, body in enumerate(pieces[:-1]):
        for length in range(min(len(secret) - 1, len(body)), MIN_PREFIX - 1, -1):
            if body.endswith(secret[:length]):
                pieces[index] = body[:-length] + MASK
                break
    return "…".join(pieces)


#: A credential shorter than this is not looked for by ``Secrets``: it would garble innocent
#: text (a one-letter test credential masks every "t"), and a secret that short is no secret.
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
            # The longest first: a secret that contains another is masked whole.
            self._values.sort(key=len, reverse=True)

    def mask(self, text: str) -> str:
        for secret in self._values:
            text = redact(text, secret)
        return text

    def mask_json(self, value: Any) -> Any:
        """A decoded JSON value with every string (keys included) masked; as is without secrets."""
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
    """``url`` (or a request target, path and query) fit for a log line or a repr: every query
    value masked, a user-info too. URLs carry API keys in their query (``?api_key=…``); the
    names stay, so a reader still sees which parameters there were."""
    url = _USERINFO.sub(f"{QUERY_MASK}@", url)
    base, question, rest = url.partition("?")
    if not question:
        return url
    query, hash_, fragment = rest.partition("#")
    fields = [f"{name}={QUERY_MASK}" if equals else QUERY_MASK for name, equals, _ in _pairs(query)]
    return f"{base}?{'&'.join(fields)}{hash_ and '#' + QUERY_MASK}"


def _pairs(query: str) -> list[tuple[str, str, str]]:
    return [field.partition("=") for field in query.split("&")] if query else []
