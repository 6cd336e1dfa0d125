"""Test a configured server's connection: the handshake only, nothing stored.

The client stamps liveness on success (health.py); the report is for the operator's
eyes and is never written to the row, so it cannot overwrite ``import_error``. The one
exception is authorization: a grant that cannot be renewed marks an OAuth server "needs
reconnect", as every other operation does (authorization/runtime.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..authorization import runtime as authorization
from ..mcp import ConnectionReport, redact
from ..models import McpServer
from . import health
from .endpoints import endpoint_for, mcp_client


@dataclass(frozen=True)
class ConnectionTest:
    report: ConnectionReport
    # This test marked the server "needs reconnect" (its grant cannot be renewed without a person).
    needs_reconnect: bool = False


def test_connection(server: McpServer) -> ConnectionTest:
    """Ping ``server`` under its own budget; transport failures come back in the report."""
    endpoint = endpoint_for(server)
    with health.carried() as stamps:
        report = mcp_client().ping(endpoint)
    health.write_shown(stamps)
    marked = report.failure is not None and authorization.observe(server, report.failure)
    # The error is shown to every operator with the admin open; never the credential.
    return ConnectionTest(replace(report, error=redact(report.error, endpoint.credential)), marked)


# Named for what an operator asks for; keep pytest from collecting it where it is imported.
test_connection.__test__ = False  # type: ignore[attr-defined]
