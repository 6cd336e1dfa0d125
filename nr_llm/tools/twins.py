"""The async twins of the tool API, in Django's convention: ``aexecute``, ``aresume``,
``adefinitions``, with the same arguments and results as the sync functions.

Each awaits its sync twin on the tool-call pool (``threads.py`` says why there and not on
Django's one sync thread), so concurrent requests' calls run side by side.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..governance.ledger import WallClock
from ..providers import Provider
from . import threads
from .elicit import Responder
from .execution import ToolCaller, execute, resume
from .offering import definitions
from .results import ToolResult


async def aexecute(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    client: ToolCaller | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    clock: WallClock | None = None,
    tool_call_id: str | None = None,
    responder: Responder | None = None,
) -> ToolResult:
    """``execute()`` for an async caller: never raises for a tool's failure either.

    Cancelled while the call runs (the client went away), the call still ends on its thread
    and its ledger row records how; it is never sent twice.
    """
    return await threads.run(
        execute,
        name,
        arguments,
        client=client,
        actor=actor,
        data_class_ceiling=data_class_ceiling,
        clock=clock,
        tool_call_id=tool_call_id,
        responder=responder,
    )


async def aresume(
    call_id: object,
    *,
    client: ToolCaller | None = None,
    clock: WallClock | None = None,
    tool_call_id: str | None = None,
) -> ToolResult:
    """``resume()`` for an async caller."""
    return await threads.run(resume, call_id, client=client, clock=clock, tool_call_id=tool_call_id)


async def adefinitions(
    provider: Provider = "openai",
    *,
    data_class_ceiling: str | None = None,
    strict: bool = False,
    defer: bool = False,
    always_loaded: Collection[str] = (),
) -> list[dict[str, Any]]:
    """``definitions()`` for an async caller."""
    return await threads.run(
        definitions,
        provider,
        data_class_ceiling=data_class_ceiling,
        strict=strict,
        defer=defer,
        always_loaded=always_loaded,
    )
