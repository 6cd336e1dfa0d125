"""The MCP protocol client. Imports nothing from Django, so it is testable without a
database and reusable outside Django.

Three layers, imports one way only (tests/mcp/test_layers.py reads them):

- ``wire/``: HTTP. The leg machine, watchdog, idle pool, host gate, header and body caps,
  event-stream decoding, sealing, the deadline and the error vocabulary. Imports nothing of
  ``protocol`` or ``oauth``: it knows nothing of JSON-RPC.
- ``oauth/``: MCP authorization (OAuth 2.1). Imports ``wire`` only.
- ``protocol/``: the MCP conversations (client, eras, handshake, 2026 requests, resend rule,
  JSON-RPC, schema, content, results). Imports ``wire``, and ``oauth`` only through the
  package's public face (``nr_llm.mcp.oauth``), never its modules.

This module is the public face: what a site imports is named here.
"""

from .protocol.client import Features, McpClient
from .protocol.elicitation import ElicitationAnswer, ElicitationRequest, Elicitor
from .protocol.endpoint import Endpoint
from .protocol.features import Completion, PromptMessage, PromptOutcome
from .protocol.results import CallOutcome, ConnectionReport
from .wire.connection import ConnectionSettings
from .wire.deadline import MINIMUM_LEG_SECONDS, MonotonicClock, OperationDeadline
from .wire.errors import AuthorizationError, McpTransportError
from .wire.redaction import redact
from .wire.text import NAME_LIMIT, clean, encodable

__all__ = [
    "CallOutcome",
    "Completion",
    "ElicitationAnswer",
    "ElicitationRequest",
    "Elicitor",
    "Features",
    "PromptMessage",
    "PromptOutcome",
    "ConnectionReport",
    "ConnectionSettings",
    "Endpoint",
    "McpClient",
    "McpTransportError",
    # For the Django side of this package (tests/test_import_graph.py keeps it off the wire's
    # modules): cleaning remote text, masking secrets, the deadline and the errors it raises.
    "MINIMUM_LEG_SECONDS",
    "NAME_LIMIT",
    "AuthorizationError",
    "MonotonicClock",
    "OperationDeadline",
    "clean",
    "encodable",
    "redact",
]
