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


@dataclass(frozen=True)
class CallOutcome:
    text: str
    is_error: bool
