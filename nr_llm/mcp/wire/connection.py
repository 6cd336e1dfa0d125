"""How this installation connects: one frozen value, built once and handed down whole.

The private-network policy, the trust (a CA bundle, or certifi's), how long an idle connection
is kept and how host names resolve reach every leg, MCP and OAuth alike, as this one value:
``McpClient`` holds it, ``Transport``, ``OAuthLegs`` and ``OperationTokens`` pass it on, and the
leg machine reads it. The Django side builds it from its settings in one place
(``nr_llm.conf``, ``MCP_CONNECTION``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .hostgate import Resolver
from .pool import DEFAULT_KEEPALIVE_SECONDS


@dataclass(frozen=True)
class ConnectionSettings:
    """``allow_private_networks``: legs may reach private and loopback addresses (and plain
    http:// with a credential). ``ca_bundle``: a PEM file of the authorities to trust instead of
    the certificates ``requests`` ships; the environment's REQUESTS_CA_BUNDLE is never read.
    ``keepalive_seconds``: how long a connection may idle in the process's pool before a later
    leg to the same origin reuses it (pool.py); 0 gives every leg a new connection.
    ``resolver``: maps a host name and port to the addresses to dial (the system's
    ``getaddrinfo`` by default; tests map names to loopback)."""

    allow_private_networks: bool = False
    ca_bundle: str | None = None
    keepalive_seconds: float = DEFAULT_KEEPALIVE_SECONDS
    resolver: Resolver | None = None
