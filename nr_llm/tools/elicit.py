"""Turn a site's ``responder=`` callable into what the MCP client asks; None means "not now"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..mcp import ElicitationAnswer, ElicitationRequest, Elicitor, McpTransportError

Responder = Callable[[ElicitationRequest], ElicitationAnswer | None]


def responder_for(responder: Responder | Any | None, server: str) -> Any | None:
    """None declares no capability; a ready responder object is used as it is."""
    if responder is None:
        return None
    if hasattr(responder, "answer") and hasattr(responder, "capabilities"):
        return responder
    if callable(responder):
        return Elicitor(responder, server)
    raise TypeError("responder must be a callable or an object with answer() and capabilities")


def needs_input(elicitor: Any | None, error: McpTransportError | None = None) -> bool:
    """The server asked for input the call could not give, or the responder said "not now"."""
    if error is not None and error.kind == "input_required":
        return True
    return bool(getattr(elicitor, "unanswered", ()))
