"""What the client's operations return: frozen values that callers format."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class CallOutcome:
    text: str
    is_error: bool
