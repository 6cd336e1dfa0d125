"""What the client's operations return: frozen values that callers format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .errors import ErrorKind, McpTransportError


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


@dataclass(frozen=True)
class CallOutcome:
    text: str
    is_error: bool
    # The era the answer came in ("modern" or "handshake"), for the ledger; "" when not known.
    era: str = ""
