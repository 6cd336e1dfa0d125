"""A turn's tool results as the messages each provider takes for the model's next turn.

The shapes are checked against the ``openai`` and ``anthropic`` packages' typed dicts in
tests/tools/test_messages.py. A block a provider would reject (HTTP 400 for the whole
conversation) is never sent, and every call gets a result, ran or not: the providers refuse a
turn with an unanswered call.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any

from ..mcp import Block, data_url
from ..providers import Provider
from .results import ToolResult

#: The image types all three providers accept; another image is named in the text, not sent.
MODEL_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
EMPTY = "(the tool returned no content)"
#: How each accepted image type begins (its magic bytes); WebP is RIFF, a size, then WEBP.
_MAGIC: dict[str, tuple[tuple[int, bytes], ...]] = {
    "image/png": ((0, b"\x89PNG\r\n\x1a\n"),),
    "image/jpeg": ((0, b"\xff\xd8\xff"),),
    "image/gif": ((0, b"GIF8"),),
    "image/webp": ((0, b"RIFF"), (8, b"WEBP")),
}


def tool_messages(
    provider: Provider, results: Iterable[ToolResult | tuple[str, ToolResult]]
) -> list[dict[str, Any]]:
    """The messages (Chat Completions, Anthropic) or input items (Responses) to append, in order.

    Each result must carry its ``tool_call_id`` (``execute_many`` sets it), or come as a
    ``(tool_call_id, result)`` pair.
    """
    pairs = [_pair(item) for item in results]
    if provider == "openai":
        return _chat(pairs)
    if provider == "openai-responses":
        return [_responses_item(call_id, result) for call_id, result in pairs]
    if provider == "anthropic":
        return [{"role": "user", "content": [_tool_result(call_id, result) for call_id, result in pairs]}]
    raise ValueError(f"unknown provider {provider!r}: 'openai', 'openai-responses' or 'anthropic'")


def _pair(item: ToolResult | tuple[str, ToolResult]) -> tuple[str, ToolResult]:
    if isinstance(item, ToolResult):
        if item.tool_call_id is None:
            raise ValueError(
                "a result without the provider's id of its call: pass execute(..., tool_call_id=<the "
                "model's id>) or use execute_many, whose results carry it"
            )
        return item.tool_call_id, item
    tool_call_id, result = item
    return tool_call_id, result


def _ran(result: ToolResult) -> bool:
    return result.status in ("succeeded", "failed")


def _images(result: ToolResult) -> list[Block]:
    if not _ran(result):
        return []
    return [block for block in result.images if _sendable(block)]


def _sendable(block: Block) -> bool:
    return block["mimeType"] in MODEL_IMAGE_TYPES and _is_declared_type(block)


def _is_declared_type(block: Block) -> bool:
    """A provider refuses the whole request when an image's bytes are not its declared type."""
    try:
        head = base64.b64decode(block["data"][:24], validate=True)
    except (binascii.Error, ValueError):
        return False
    return all(head[at : at + len(magic)] == magic for at, magic in _MAGIC[block["mimeType"]])


def _text(result: ToolResult) -> str:
    text = result.text if result.text.strip() else EMPTY
    if not _ran(result):
        return text
    mislabelled = [
        block["mimeType"]
        for block in result.images
        if block["mimeType"] in MODEL_IMAGE_TYPES and not _is_declared_type(block)
    ]
    if mislabelled:
        text += (
            f"\n[{len(mislabelled)} image(s) left out: the bytes are not the declared "
            f"{', '.join(sorted(set(mislabelled)))}]"
        )
    return text


def _chat(pairs: list[tuple[str, ToolResult]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for call_id, result in pairs:
        images = _images(result)
        text = _text(result)
        if images:
            text += f"\n[{len(images)} image(s) of this call follow in the next user message]"
            parts.append({"type": "text", "text": f"Images returned by tool call {call_id}:"})
            parts.extend({"type": "image_url", "image_url": {"url": data_url(image)}} for image in images)
        messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
    if parts:
        # After every tool message: the API wants a tool_calls turn answered before anything else.
        messages.append({"role": "user", "content": parts})
    return messages


def _responses_item(call_id: str, result: ToolResult) -> dict[str, Any]:
    images = _images(result)
    output: str | list[dict[str, Any]] = _text(result)
    if images:
        output = [{"type": "input_text", "text": _text(result)}]
        output.extend({"type": "input_image", "image_url": data_url(image)} for image in images)
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _tool_result(call_id: str, result: ToolResult) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": _text(result)}]
    for image in _images(result):
        source = {"type": "base64", "media_type": image["mimeType"], "data": image["data"]}
        content.append({"type": "image", "source": source})
    return {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": content,
        # Claude reads is_error as "this did not work", which a call that did not run is.
        "is_error": result.is_error or not _ran(result),
    }
