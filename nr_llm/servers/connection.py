"""Test a server's connection with a ping, storing nothing but the contact stamp, so the report
cannot overwrite ``import_error``."""

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
    needs_reconnect: bool = False


def test_connection(server: McpServer) -> ConnectionTest:
    """Failures come back in the report; an unrenewable grant marks "needs reconnect"."""
    endpoint = endpoint_for(server)
    with health.carried() as stamps:
        report = mcp_client().ping(endpoint)
    health.write_shown(stamps)
    marked = report.failure is not None and authorization.observe(server, report.failure)
    # Every operator with the admin open sees the error.
    return ConnectionTest(replace(report, error=redact(report.error, endpoint.credential)), marked)


# Named for what an operator asks for; keep pytest from collecting it where it is imported.
test_connection.__test__ = False  # type: ignore[attr-defined]
