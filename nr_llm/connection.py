"""Test a configured server's connection: the handshake only, nothing stored.

The client stamps liveness on success (health.py); the report is for the operator's
eyes and is never written to the row, so it cannot overwrite ``import_error``.
"""

from __future__ import annotations

from .endpoints import endpoint_for, mcp_client
from .mcp import ConnectionReport
from .models import McpServer


def test_connection(server: McpServer) -> ConnectionReport:
    """Ping ``server`` under its own budget; transport failures come back in the report."""
    return mcp_client().ping(endpoint_for(server))


# Named for what an operator asks for; keep pytest from collecting it where it is imported.
test_connection.__test__ = False  # type: ignore[attr-defined]
