"""What ``tools.execute(..., responder=...)`` hands the MCP client, and how it reads the answer.

A site passes a plain callable ``respond(ElicitationRequest) -> ElicitationAnswer | None`` (or an
``InputResponder`` of its own, used as it is). None from the callable means "no answer now".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..mcp import ElicitationAnswer, ElicitationRequest, Elicitor, McpTransportError

Responder = Callable[[ElicitationRequest], ElicitationAnswer | None]


def responder_for(responder: Responder | Any | None, server: str) -> Any | None:
    """The client's ``responder=``: None stays None (no capability declared), an object with
    ``answer`` and ``capabilities`` is used as it is, a callable is wrapped in an ``Elicitor``."""
    if responder is None:
        return None
    if hasattr(responder, "answer") and hasattr(responder, "capabilities"):
        return responder
    if callable(responder):
        return Elicitor(responder, server)
    raise TypeError("responder must be a callable or an object with answer() and capabilities")


def needs_input(elicitor: Any | None, error: McpTransportError | None = None) -> bool:
    """The call's status is ``needs_input``: the server asked for input the call could not give
    (``input_required``), or the site's responder answered "not now" (None) to a request."""
    if error is not None and error.kind == "input_required":
        return True
    return bool(getattr(elicitor, "unanswered", ()))
