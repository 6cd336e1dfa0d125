"""The site's prompt API: what is enabled, filling one in a provider's shape, completing an
argument. Governed as resources are (reading.py): an enabled, unchanged row of an enabled server
within the caller's ceiling, a ledger row per get; nothing a server or caller does is raised."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..authorization import actors
from ..authorization import runtime as authorization
from ..governance import ceiling
from ..mcp import NAME_LIMIT, Completion, Endpoint, McpTransportError, PromptOutcome, clean, redact
from ..models import FeatureKind, McpFeature
from ..providers import PROVIDERS, Provider
from ..resources import record
from ..resources.reading import needs_text, offered
from ..servers.endpoints import mcp_client
from .shapes import messages_for

#: ``needs_authorization``: a per-user server and an actor with no usable grant (see
#: ``connect_url``); the server was not contacted.
PromptStatus = Literal["succeeded", "failed", "refused", "needs_authorization"]


class PromptClient(Protocol):
    def get_prompt(
        self, endpoint: Endpoint, name: str, arguments: dict[str, str] | None = None
    ) -> PromptOutcome: ...

    def complete(
        self,
        endpoint: Endpoint,
        ref: dict[str, str],
        argument: str,
        value: str,
        *,
        context: dict[str, str] | None = None,
    ) -> Completion: ...


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    server: str
    name: str
    title: str = ""
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True)
class PromptResult:
    """``messages`` in the provider's shape; on a failure ``text`` says why and ``messages`` is empty."""

    messages: list[dict[str, Any]]
    is_error: bool = False
    status: PromptStatus = "succeeded"
    text: str = ""
    server: str = ""
    description: str = ""
    notes: tuple[str, ...] = ()
    #: Where the actor connects their account (status ``needs_authorization``), else "".
    connect_url: str = ""


@dataclass(frozen=True)
class CompletionResult:
    """The server's completion values for one argument. ``total`` and ``has_more`` as the server
    said (``total`` None when it did not); on a refusal or failure ``values`` is empty and
    ``text`` says why."""

    values: tuple[str, ...] = ()
    total: int | None = None
    has_more: bool = False
    status: PromptStatus = "succeeded"
    text: str = ""
    connect_url: str = ""


def _arguments(row: McpFeature) -> tuple[PromptArgument, ...]:
    listed = row.definition.get("arguments")
    if not isinstance(listed, list):
        return ()
    return tuple(
        PromptArgument(
            name=clean(item.get("name"), NAME_LIMIT),
            description=clean(item.get("description", ""), 500),
            required=item.get("required") is True,
        )
        for item in listed
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    )


def available(data_class_ceiling: str | None = None) -> list[Prompt]:
    return [
        Prompt(
            server=row.server.identifier,
            name=row.key,
            title=row.title,
            description=row.description,
            arguments=_arguments(row),
        )
        for row in offered(data_class_ceiling, (FeatureKind.PROMPT,))
    ]


def _find(name: str, server: str | None, applied: str) -> tuple[McpFeature | None, str]:
    rows = [row for row in offered(applied, (FeatureKind.PROMPT,)) if row.key == name]
    if server is not None:
        rows = [row for row in rows if row.server.identifier == server]
    if not rows:
        where = f" of MCP server {clean(server, NAME_LIMIT)!r}" if server else ""
        return (
            None,
            f"no enabled prompt {clean(name, NAME_LIMIT)!r}{where} within this caller's data-class ceiling",
        )
    if len(rows) > 1:
        servers = ", ".join(row.server.identifier for row in rows)
        return (
            None,
            f"prompt {clean(name, NAME_LIMIT)!r} is offered by several servers ({servers}); pass server=",
        )
    return rows[0], ""


def get(
    name: str,
    arguments: dict[str, str] | None = None,
    *,
    provider: Provider = "openai",
    server: str | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    client: PromptClient | None = None,
) -> PromptResult:
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
    applied = ceiling.resolve(data_class_ceiling)
    arguments = dict(arguments or {})
    row, why = _find(name, server, applied)
    named = server or (row.server.identifier if row is not None else "")
    if row is None:
        record.refused("prompts/get", named, name[:150], arguments, actor, applied, why)
        return PromptResult([], True, "refused", why, named)
    missing = [
        argument.name for argument in _arguments(row) if argument.required and argument.name not in arguments
    ]
    bad = [key for key, value in arguments.items() if not isinstance(value, str)]
    if missing or bad:
        why = (
            f"prompt {name!r} needs the argument(s) {', '.join(map(repr, missing))}"
            if missing
            else f"prompt arguments are strings; not {', '.join(map(repr, bad))}"
        )
        record.refused("prompts/get", named, name[:150], arguments, actor, applied, why, row.server)
        return PromptResult([], True, "refused", why, named)
    access = actors.resolve(row.server, actor)
    if isinstance(access, actors.NeedsAuthorization):
        text = needs_text(access, f"the prompt {clean(name, NAME_LIMIT)!r} was not fetched")
        record.refused(
            "prompts/get",
            named,
            name[:150],
            arguments,
            actor,
            applied,
            text,
            row.server,
            error_kind="needs_authorization",
        )
        return PromptResult([], True, "needs_authorization", text, named, connect_url=access.connect_url)
    endpoint = access
    call_id = record.started("prompts/get", named, name[:150], arguments, actor, applied, row.server)
    if isinstance(call_id, str):
        # No row, no request (as for a tool call).
        return PromptResult([], True, "failed", call_id, named)
    started = time.monotonic()
    try:
        outcome = (client or mcp_client()).get_prompt(endpoint, name, arguments)
    except McpTransportError as exc:
        authorization.observe(row.server, exc, user_id=actors.actor_id(actor))
        text = redact(str(exc), endpoint.credential)
        record.finished(
            call_id, is_error=True, error_kind=exc.kind, duration_ms=_ms(started), era="", note=text
        )
        return PromptResult([], True, "failed", text, named)
    record.finished(
        call_id,
        is_error=False,
        error_kind="",
        duration_ms=_ms(started),
        era="",
        note=f"{len(outcome.messages)} message(s)",
    )
    return PromptResult(
        messages_for(outcome.messages, provider),
        server=named,
        description=outcome.description,
        notes=outcome.notes,
    )


def complete(
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
    """The server's completion values for one argument of an enabled prompt, asked as ``actor``
    (a per-user server acts as its user); nothing raised, a refusal or failure says why."""
    row, why = _find(name, server, ceiling.resolve(data_class_ceiling))
    if row is None:
        return CompletionResult(status="refused", text=why)
    access = actors.resolve(row.server, actor)
    if isinstance(access, actors.NeedsAuthorization):
        text = needs_text(access, f"the prompt {clean(name, NAME_LIMIT)!r} was not completed")
        return CompletionResult(status="needs_authorization", text=text, connect_url=access.connect_url)
    try:
        completion = (client or mcp_client()).complete(
            access, {"type": "ref/prompt", "name": name}, argument, value, context=context
        )
    except McpTransportError as exc:
        authorization.observe(row.server, exc, user_id=actors.actor_id(actor))
        return CompletionResult(status="failed", text=redact(str(exc), access.credential))
    return CompletionResult(tuple(completion.values), completion.total, completion.has_more)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
