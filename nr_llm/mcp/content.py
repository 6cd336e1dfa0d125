"""A ``tools/call`` result as the text a model reads: text blocks joined, the rest counted.

Non-text blocks are not dropped silently: a note naming them by the protocol's own type
names LEADS the text, so a model (or a person) truncating a long answer still sees it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from .errors import McpTransportError
from .results import CallOutcome

NAMED_BLOCK_TYPES = ("image", "audio", "resource", "resource_link")


def outcome_of(result: dict[str, Any], server: str) -> CallOutcome:
    content = result.get("content", [])
    if not isinstance(content, list):
        raise McpTransportError(
            "malformed", server, f"MCP server {server!r} sent tool content that is not a list."
        )
    texts: list[str] = []
    others: Counter[str] = Counter()
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        else:
            others[kind if kind in NAMED_BLOCK_TYPES else "other"] += 1
    if not content and "structuredContent" in result:
        # A tool that answers only in structured form still tells the model something.
        texts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    text = "\n".join(texts)
    if others:
        counted = ", ".join(f"{count} {kind}" for kind, count in sorted(others.items()))
        note = f"[non-text content not shown: {counted}]"
        text = f"{note}\n{text}" if text else note
    return CallOutcome(text=text, is_error=result.get("isError") is True)
