"""Hearing that a server's tools changed: one change stream held open for a window.

- 2026-07-28: a ``subscriptions/listen`` request asking for ``toolsListChanged``; its answer is
  the stream (acknowledged first), each change a ``notifications/tools/list_changed``.
- the handshake era: a session (``initialize``, ``notifications/initialized``), then a GET on
  the endpoint with the session id: the session's stream, on which the server sends the same
  notification; the session is ended (DELETE) when the window closes.

A window is one operation whose budget is the window: every leg, the stream included, is sent
by wire/legs.py like any other (host gate, TLS by name, caps, redirects refused), and the stream
is cut when the window ends. The caller (the Django side's watcher) decides what a change
costs (a debounced re-import) and how often to reconnect: nothing here loops or retries.
Nothing here sends a ``tools/call``, so the exactly-once rule has nothing to guard.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..wire.deadline import OperationDeadline
from ..wire.errors import McpTransportError
from ..wire.redaction import Secrets
from . import jsonrpc, modern
from .client import McpClient
from .endpoint import Endpoint
from .handshake import HandshakeConversation, client_info
from .modern_conversation import ModernConversation

TOOLS_CHANGED = "notifications/tools/list_changed"
LISTEN = "subscriptions/listen"


@dataclasses.dataclass(frozen=True)
class Window:
    """How one window ended: ``era`` it was held in, ``changes`` heard, and whether the
    server ended the stream itself (``closed``) or the window ran out."""

    era: str
    changes: int
    closed: bool


def listen(
    client: McpClient, endpoint: Endpoint, on_change: Callable[[], None], *, window_seconds: float
) -> Window:
    """Hold ``endpoint``'s change stream open for at most ``window_seconds``, calling
    ``on_change()`` for each ``tools/list`` change; a failure to open it is raised
    (``McpTransportError``), the window's end is not."""
    windowed = dataclasses.replace(endpoint, budget_seconds=window_seconds)
    secrets = Secrets()
    if endpoint.needs_credential:
        secrets.add(endpoint.credential)
    changes = 0

    def heard(message: Any) -> None:
        nonlocal changes
        if isinstance(message, dict) and message.get("method") == TOOLS_CHANGED:
            changes += 1
            on_change()

    key = client.era_cache.key_for(endpoint.url)
    known = client.era_cache.get(key, client.clock.monotonic_ns())
    # The client's own transport and negotiation: the window is an operation like any other.
    with client._transport(windowed, secrets) as (transport, deadline):
        if known is None:
            conversation = client._negotiate(transport, deadline, key, None)
        elif known.era == "modern":
            conversation = ModernConversation(transport, deadline, known.version)
        else:
            conversation = HandshakeConversation(transport, deadline)
        try:
            if isinstance(conversation, ModernConversation):
                params = {"notifications": {"toolsListChanged": True}}
                version = conversation.protocol_version
                body = modern.stamped(params, version, {}, client_info())
                transport.listen(
                    deadline,
                    "POST",
                    jsonrpc.request(1, LISTEN, body),
                    heard,
                    session_id=None,
                    protocol_version=version,
                    extra_headers=modern.routing_headers(LISTEN, params),
                )
            else:
                conversation.open()
                try:
                    transport.listen(
                        deadline,
                        "GET",
                        None,
                        heard,
                        session_id=conversation.session_id,
                        protocol_version=conversation.protocol_version,
                    )
                finally:
                    # The window may be spent: the session's end gets a budget of its own.
                    conversation.deadline = OperationDeadline(
                        endpoint.budget_seconds, client.clock, endpoint.identifier
                    )
                    conversation.end()
        except McpTransportError as exc:
            if exc.kind in ("timeout", "deadline_exhausted") and deadline.remaining_ns() < 2_000_000_000:
                return Window(conversation.era, changes, closed=False)  # the window ran out
            raise
    return Window(conversation.era, changes, closed=True)
