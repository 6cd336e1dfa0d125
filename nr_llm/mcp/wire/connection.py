"""How this installation connects: one value, so every MCP and OAuth request follows it."""

from __future__ import annotations

from dataclasses import dataclass

from .hostgate import Resolver
from .pool import DEFAULT_KEEPALIVE_SECONDS


@dataclass(frozen=True)
class ConnectionSettings:
    """``ca_bundle`` replaces certifi's roots (REQUESTS_CA_BUNDLE is never read);
    ``keepalive_seconds`` 0 gives every request a new connection; tests map names to loopback."""

    allow_private_networks: bool = False
    ca_bundle: str | None = None
    keepalive_seconds: float = DEFAULT_KEEPALIVE_SECONDS
    resolver: Resolver | None = None
