"""Mark a server "needs reconnect" when its authorization cannot be fixed by retrying, and tell
the model the tool is unavailable rather than hand it an error it might retry."""

from __future__ import annotations

import logging

from ..mcp import AuthorizationError, McpTransportError
from ..models import McpServer
from .columns import REASONS
from .store import DatabaseGrantStore

logger = logging.getLogger("nr_llm.authorization")


def needs_operator(exc: McpTransportError) -> bool:
    return exc.kind == "authorization_required"


def reason_of(exc: McpTransportError) -> str:
    return exc.reason if isinstance(exc, AuthorizationError) else "not_authorized"


def observe(server: McpServer, exc: McpTransportError, user_id: int | None = None) -> bool:
    """True when the grant now needs reconnect; never raises (a reporting boundary)."""
    if not server.uses_oauth or not needs_operator(exc):
        return False
    scopes = exc.scopes if isinstance(exc, AuthorizationError) else ()
    try:
        store = DatabaseGrantStore(user_id if server.per_user else None)
        store.mark_attention(server.identifier, reason_of(exc), tuple(scopes))
    except Exception:
        logger.warning("could not mark MCP server %s as needing reconnect", server.identifier, exc_info=True)
        return False
    return True


def unavailable_text(server: McpServer, tool_name: str, exc: McpTransportError) -> str:
    """The tool result an agent loop gets: unavailable, why, and that retrying will not help."""
    why = REASONS.get(reason_of(exc), "its authorization must be renewed")
    return (
        f'The tool {tool_name!r} of MCP server "{server.name}" ({server.identifier}) is unavailable: '
        f"{why}, and only an operator can reconnect it in the admin. Do not retry it; continue without it."
    )
