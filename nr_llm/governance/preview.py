"""The kept start of a tool call's answer (the ledger's ``result_preview_ciphertext``).

Encrypted with the site's credential keys: an answer may hold what the arguments asked for.
"""

from __future__ import annotations

import json
from typing import Any

from ..conf import conf
from ..mcp import encodable
from ..servers import credentials
from ..servers.credentials import CredentialUnavailable
from .models import ToolCall

STRUCTURED_HEADING = "\n[structured content]\n"


def preview(text: str, structured: dict[str, Any] | None = None) -> str:
    """The kept start of an answer, encrypted: it may hold what the arguments asked for.

    Structured content is kept after the text, pretty-printed, both within the limit (the text
    gets at most half when both do not fit): an operator reads the shape the model's code got.
    """
    limit = conf.TOOL_CALL_PREVIEW_CHARS
    shown = json.dumps(structured, ensure_ascii=False, indent=2) if structured is not None else ""
    if shown and text.strip() == json.dumps(structured, ensure_ascii=False):
        text = ""  # the text only mirrors it: kept once, the readable way
    if limit == 0 or not (text or shown):
        return ""
    if not shown:
        return credentials.encrypt(encodable(_clip(text, limit)))
    room = limit - len(STRUCTURED_HEADING)
    if room < 2:
        return credentials.encrypt(encodable(_clip(text or shown, limit)))
    kept_text = _clip(text, max(room - len(shown), room // 2)) if text else ""
    return credentials.encrypt(
        encodable(kept_text + STRUCTURED_HEADING + _clip(shown, room - len(kept_text)))
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"[: max(0, limit)]


def kept(text: str, structured: dict[str, Any] | None = None) -> str:
    """``preview``, or "" when it cannot be made: the row is written without the answer."""
    try:
        return preview(text, structured)
    except (CredentialUnavailable, ValueError):
        return ""  # no key to encrypt with (or none configured): the answer is not kept


def preview_of(call: ToolCall) -> str:
    return credentials.decrypt(call.result_preview_ciphertext) if call.result_preview_ciphertext else ""
