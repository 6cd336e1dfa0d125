"""One name for each model API whose shapes the app speaks (see "Provider" in the glossary)."""

from __future__ import annotations

from typing import Literal

Provider = Literal["openai", "openai-responses", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "openai-responses", "anthropic")
