"""What the client's operations return: frozen values that callers format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..wire.errors import ErrorKind, McpTransportError

if TYPE_CHECKING:
    from .tasks import TaskState


@dataclass(frozen=True)
class ConnectionReport:
    reachable: bool
    latency_ms: int | None = None
    protocol_version: str = ""
    server_name: str = ""
    server_version: str = ""
    error: str = ""
    # "modern" (2026-07-28, server/discover) or "handshake" (initialize); "" when unreachable.
    era: str = ""
    # The failure itself, for a caller that acts on it (e.g. an OAuth server whose grant
    # cannot be renewed needs reconnect). Out of repr and equality: those stay the values.
    failure: McpTransportError | None = field(default=None, repr=False, compare=False)

    @property
    def error_kind(self) -> ErrorKind | Literal[""]:
        """The failure's kind (see errors.py); "" for a reachable server."""
        return self.failure.kind if self.failure is not None else ""


#: A content block in MCP shape (``text``, ``image``, ``audio``, ``resource_link``, ``resource``),
#: rebuilt from the fields MCP defines, cleaned and capped (content.py).
Block = dict[str, Any]


@dataclass(frozen=True)
class CallOutcome:
    """A tool's answer: ``text`` for a text reader, ``content`` as the server's blocks (kept and
    cleaned), ``structured`` its structured content (checked against the tool's output schema
    when one was given: content.conform_outcome), ``mismatch`` the first way it missed that schema,
    ``notes`` what was dropped."""

    text: str
    is_error: bool
    # The era the answer came in ("modern" or "handshake"), for the ledger; "" when not known.
    era: str = ""
    content: tuple[Block, ...] = ()
    structured: dict[str, Any] | None = None
    mismatch: str = ""
    #: What was not passed on, and why (they also lead ``text``).
    notes: tuple[str, ...] = ()
    #: The task the server ran the call as (tasks.py), in its last state; None for a direct answer.
    task: TaskState | None = None
