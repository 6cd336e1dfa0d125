"""The site's prompt API: what is enabled, filling one in a provider's shape, completing an
argument. Governed as resources are (reading.py): an enabled, unchanged row of an enabled server
within the caller's ceiling, a ledger row per get; nothing a server or caller does is raised."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..governance import ceiling
from ..mcp import Endpoint, McpTransportError
from ..mcp.protocol.features import Completion, PromptOutcome
from ..mcp.wire.redaction import redact
from ..mcp.wire.text import NAME_LIMIT, clean
from ..models import FeatureKind, McpFeature
from ..providers import PROVIDERS, Provider
from ..resources import record
from ..resources.reading import offered
from ..servers.endpoints import endpoint_for, mcp_client
from .shapes import messages_for

PromptStatus = Literal["succeeded", "failed", "refused"]


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
        record.refused("prompts/get", named, name[:150], arguments, actor, applied, why)
        return PromptResult([], True, "refused", why, named)
    endpoint = endpoint_for(row.server)
    call_id = record.started("prompts/get", named, name[:150], arguments, actor, applied)
    started = time.monotonic()
    try:
        outcome = (client or mcp_client()).get_prompt(endpoint, name, arguments)
    except McpTransportError as exc:
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
    data_class_ceiling: str | None = None,
    client: PromptClient | None = None,
) -> list[str]:
    """The server's completion values for one argument of an enabled prompt ([] when none or refused)."""
    row, _ = _find(name, server, ceiling.resolve(data_class_ceiling))
    if row is None:
        return []
    try:
        completion = (client or mcp_client()).complete(
            endpoint_for(row.server), {"type": "ref/prompt", "name": name}, argument, value, context=context
        )
    except McpTransportError:
        return []
    return list(completion.values)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
