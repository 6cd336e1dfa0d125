"""A filled MCP prompt in each provider's message shape (checked against the ``openai`` and
``anthropic`` packages' published types in the tests).

Each MCP message has a role (user, assistant) and one content block. What a provider takes is
passed as that provider takes it; what it does not take becomes a bracketed text line naming
it, never dropped silently:

- text: a text part everywhere;
- image: OpenAI Chat ``image_url`` and Responses ``input_image`` (a data URL), Anthropic an
  ``image`` block with a base64 source (JPEG, PNG, GIF, WebP only); an assistant message takes
  text only, so there it is a line of text;
- audio: OpenAI Chat ``input_audio`` (wav, mp3) in a user message; a line of text elsewhere;
- an embedded resource: its text as a text part headed by its URI (Anthropic: a plain-text
  ``document`` titled by its URI); a blob is a line naming it;
- a resource link: a line naming it and its URI.
"""

from __future__ import annotations

from typing import Any

from ..mcp import Block, PromptMessage, data_url
from ..providers import PROVIDERS, Provider

_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_OPENAI_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def messages_for(messages: tuple[PromptMessage, ...], provider: Provider) -> list[dict[str, Any]]:
    if provider == "openai":
        return [_openai(message) for message in messages]
    if provider == "openai-responses":
        return [_responses(message) for message in messages]
    if provider == "anthropic":
        return [_anthropic(message) for message in messages]
    raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")


def as_text(block: Block) -> str:
    """A block as a line of text (what a provider that cannot take it reads)."""
    kind = block["type"]
    if kind == "text":
        return str(block["text"])
    if kind in ("image", "audio"):
        return f"[{kind}: {block['mimeType']}, not passed to this provider here]"
    if kind == "resource_link":
        return f"[resource link: {block['name']} <{block['uri']}>]"
    resource = block["resource"]
    if "text" in resource:
        return f"[resource {resource['uri']}]\n{resource['text']}"
    return f"[resource {resource['uri']}: {resource.get('mimeType', 'application/octet-stream')}, not text]"


def _openai(message: PromptMessage) -> dict[str, Any]:
    block = message.content
    if message.role == "assistant":
        return {"role": "assistant", "content": as_text(block)}
    if block["type"] == "image":
        return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(block)}}]}
    if block["type"] == "audio" and block["mimeType"] in _OPENAI_AUDIO:
        part = {"data": block["data"], "format": _OPENAI_AUDIO[block["mimeType"]]}
        return {"role": "user", "content": [{"type": "input_audio", "input_audio": part}]}
    return {"role": "user", "content": [{"type": "text", "text": as_text(block)}]}


def _responses(message: PromptMessage) -> dict[str, Any]:
    block = message.content
    if message.role == "assistant":
        return {"type": "message", "role": "assistant", "content": as_text(block)}
    if block["type"] == "image":
        part: dict[str, Any] = {"type": "input_image", "image_url": data_url(block), "detail": "auto"}
    else:
        part = {"type": "input_text", "text": as_text(block)}
    return {"type": "message", "role": "user", "content": [part]}


def _anthropic(message: PromptMessage) -> dict[str, Any]:
    block = message.content
    if message.role == "user" and block["type"] == "image" and block["mimeType"] in _ANTHROPIC_IMAGES:
        source = {"type": "base64", "media_type": block["mimeType"], "data": block["data"]}
        return {"role": "user", "content": [{"type": "image", "source": source}]}
    if block["type"] == "resource" and "text" in block["resource"] and message.role == "user":
        resource = block["resource"]
        source = {"type": "text", "media_type": "text/plain", "data": resource["text"]}
        document = {"type": "document", "source": source, "title": resource["uri"][:500]}
        return {"role": "user", "content": [document]}
    return {"role": message.role, "content": [{"type": "text", "text": as_text(block)}]}
