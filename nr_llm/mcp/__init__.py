"""The MCP protocol client. Imports nothing from Django, so it is testable without a
database and reusable outside Django."""

from .client import McpClient
from .endpoint import Endpoint
from .errors import McpTransportError
from .results import CallOutcome, ConnectionReport

__all__ = ["CallOutcome", "ConnectionReport", "Endpoint", "McpClient", "McpTransportError"]
