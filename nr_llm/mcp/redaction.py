"""Take a server's credential back out of text the server wrote.

A careless server answers "invalid token <what you sent>"; that text becomes an import
error on the admin page, an admin message or a tool result a model reads. The credential
is this installation's secret, so it is cut out wherever remote text crosses into ours: a
configured credential by the Django side, an OAuth access token (known only inside the
operation) by the client.
"""

from __future__ import annotations

import re

MASK = "[credential]"
#: What stands for a query value (or a user-info) in a URL shown in a log line or a repr.
QUERY_MASK = "[masked]"
_USERINFO = re.compile(r"(?<=://)[^/?#@]*@")
#: A clipped message (text.clean adds "…") may end in the start of the secret; a prefix
#: shorter than this says too little to be worth masking and would hide innocent text.
MIN_PREFIX = 4


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret``, and a clipped start of it, masked."""
    if not secret:
        return text
    text = text.replace(secret, MASK)
    if text.endswith("…"):
        body = text[:-1]
        for length in range(min(len(secret) - 1, len(body)), MIN_PREFIX - 1, -1):
            if body.endswith(secret[:length]):
                return body[:-length] + MASK + "…"
    return text


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
