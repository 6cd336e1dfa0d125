"""Prompts of MCP servers for a site's code, in the providers' message shapes.

- ``available(data_class_ceiling=None)`` / ``aavailable``;
- ``get(name, arguments=None, *, provider="openai" | "openai-responses" | "anthropic",
  server=None, actor=None, data_class_ceiling=None, client=None)`` / ``aget``;
- ``complete(name, argument, value, *, context=None, server=None, data_class_ceiling=None,
  client=None)`` / ``acomplete``.
"""

from __future__ import annotations

from typing import Any

from ..providers import PROVIDERS, Provider
from ..tools import threads
from .getting import Prompt, PromptArgument, PromptClient, PromptResult, available, complete, get
from .shapes import messages_for


async def aavailable(data_class_ceiling: str | None = None) -> list[Prompt]:
    return await threads.run(available, data_class_ceiling)


async def aget(
    name: str,
    arguments: dict[str, str] | None = None,
    *,
    provider: Provider = "openai",
    server: str | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    client: PromptClient | None = None,
) -> PromptResult:
    return await threads.run(
        get,
        name,
        arguments,
        provider=provider,
        server=server,
        actor=actor,
        data_class_ceiling=data_class_ceiling,
        client=client,
    )


async def acomplete(
    name: str,
    argument: str,
    value: str,
    *,
    context: dict[str, str] | None = None,
    server: str | None = None,
    data_class_ceiling: str | None = None,
    client: PromptClient | None = None,
) -> list[str]:
    values: Any = await threads.run(
        complete,
        name,
        argument,
        value,
        context=context,
        server=server,
        data_class_ceiling=data_class_ceiling,
        client=client,
    )
    return list(values)


__all__ = [
    "PROVIDERS",
    "Prompt",
    "PromptArgument",
    "PromptClient",
    "PromptResult",
    "Provider",
    "acomplete",
    "aavailable",
    "aget",
    "available",
    "complete",
    "get",
    "messages_for",
]
