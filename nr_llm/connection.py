"""Test a configured server's connection: the handshake only, nothing stored.

The client stamps liveness on success (health.py); the report is for the operator's
eyes and is never written to the row, so it cannot overwrite ``import_error``.
"""

from __future__ import annotations

from dataclasses import replace

from .endpoints import endpoint_for, mcp_client
from .mcp import ConnectionReport
from .models import McpServer
from .redaction import redact


def test_connection(server: McpServer) -> ConnectionReport:
    """Ping ``server`` under its own budget; transport failures come back in the report."""
    endpoint = endpoint_for(server)
    report = mcp_client().ping(endpoint)
    # The error is shown to every operator with the admin open; never the credential.
    return replace(report, error=redact(report.error, endpoint.credential))


# Named for what an operator asks for; keep pytest from collecting it where it is imported.
test_connection.__test__ = False  # type: ignore[attr-defined]
