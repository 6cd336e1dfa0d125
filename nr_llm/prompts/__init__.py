"""Prompts of MCP servers for a site's code, in the providers' message shapes.

- ``available(data_class_ceiling=None)`` / ``aavailable``;
- ``get(name, arguments=None, *, provider="openai" | "openai-responses" | "anthropic",
  server=None, actor=None, data_class_ceiling=None, client=None)`` / ``aget``;
- ``complete(name, argument, value, *, context=None, server=None, actor=None,
  data_class_ceiling=None, client=None)`` / ``acomplete`` → a ``CompletionResult``.

On a per-user server each acts as ``actor``; without a usable grant the server is not contacted
and the result's status is ``needs_authorization`` with the ``connect_url``.
"""

from __future__ import annotations

from ..providers import PROVIDERS, Provider
from ..tools import threads
from .getting import (
    CompletionResult,
    Prompt,
    PromptArgument,
    PromptClient,
    PromptResult,
    available,
    complete,
    get,
)
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
    actor: object = None,
    data_class_ceiling: str | None = None,
    client: PromptClient | None = None,
) -> CompletionResult:
    return await threads.run(
        complete,
        name,
        argument,
        value,
        context=context,
        server=server,
        actor=actor,
        data_class_ceiling=data_class_ceiling,
        client=client,
    )


__all__ = [
    "PROVIDERS",
    "CompletionResult",
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
