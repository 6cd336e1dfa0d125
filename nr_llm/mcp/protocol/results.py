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
    era: str = ""
    # For a caller that acts on it; out of equality, which compares what is shown.
    failure: McpTransportError | None = field(default=None, repr=False, compare=False)

    @property
    def error_kind(self) -> ErrorKind | Literal[""]:
        return self.failure.kind if self.failure is not None else ""


#: A content block in MCP shape, rebuilt from the fields MCP defines (content.py).
Block = dict[str, Any]


@dataclass(frozen=True)
class CallOutcome:
    """A tool's answer; ``mismatch`` is the first way it missed the tool's output schema."""

    text: str
    is_error: bool
    era: str = ""
    content: tuple[Block, ...] = ()
    structured: dict[str, Any] | None = None
    mismatch: str = ""
    notes: tuple[str, ...] = ()
    #: In its last state; None for a direct answer.
    task: TaskState | None = None
