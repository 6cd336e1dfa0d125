"""The model providers whose shapes the app speaks: one name for each, everywhere.

``"openai"``: OpenAI Chat Completions; ``"openai-responses"``: OpenAI's Responses API;
``"anthropic"``: Anthropic's Messages API. ``tools.definitions``, ``tools.tool_messages`` and
``prompts.get`` take one of them as ``provider``.
"""

from __future__ import annotations

from typing import Literal

Provider = Literal["openai", "openai-responses", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "openai-responses", "anthropic")
