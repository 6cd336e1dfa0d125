"""McpClient: ping(), list_tools(), call_tool() — one deadline per operation.

PLACEHOLDER: the foundation only fixes the public signatures; the implementation is
issue #3.
"""

from __future__ import annotations

from typing import Any, Protocol

from .endpoint import Endpoint
from .results import CallOutcome, ConnectionReport


class HealthSink(Protocol):
    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None: ...


class McpClient:
    def __init__(self, *, allow_private_networks: bool = False, health: HealthSink | None = None) -> None:
        self.allow_private_networks = allow_private_networks
        self.health = health

    def ping(self, endpoint: Endpoint) -> ConnectionReport:
        raise NotImplementedError

    def list_tools(self, endpoint: Endpoint) -> list[dict[str, Any]]:
        raise NotImplementedError

    def call_tool(
        self, endpoint: Endpoint, name: str, arguments: dict[str, Any] | None = None
    ) -> CallOutcome:
        raise NotImplementedError
