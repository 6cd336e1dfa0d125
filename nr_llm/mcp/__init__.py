"""The MCP protocol client. Imports nothing from Django, so it is testable without a
database and reusable outside Django.

Three layers, imports one way only (tests/mcp/test_layers.py reads them):

- ``wire/``: HTTP. Sending each request (legs.py), the watchdog, idle pool, host gate, header and body caps,
  event-stream decoding, sealing, the deadline and the error vocabulary. Imports nothing of
  ``protocol`` or ``oauth``: it knows nothing of JSON-RPC.
- ``oauth/``: MCP authorization (OAuth 2.1). Imports ``wire`` only.
- ``protocol/``: the MCP conversations (client, eras, handshake, 2026 requests, resend rule,
  JSON-RPC, schema, content, results). Imports ``wire``, and ``oauth`` only through the
  package's public face (``nr_llm.mcp.oauth``), never its modules.

This module is the public face: what a site imports is named here.
"""

from .protocol.client import Features, McpClient
from .protocol.content import (
    DEFAULT_BLOCK_BYTES,
    DEFAULT_TOTAL_BYTES,
    ContentLimits,
    conform_outcome,
    data_url,
    json_text,
    masked_outcome,
)
from .protocol.elicitation import ElicitationAnswer, ElicitationRequest, Elicitor
from .protocol.endpoint import AuthPlacement, Endpoint
from .protocol.features import Completion, PromptMessage, PromptOutcome
from .protocol.listen import listen
from .protocol.names import LOCAL_NAME_RE, InvalidToolName, checked_local_name
from .protocol.progress import Progress, ProgressListener
from .protocol.references import ReferenceProblem, resolve_reference
from .protocol.resend import may_have_run
from .protocol.results import Block, CallOutcome, ConnectionReport
from .protocol.schema import MAX_ENCODED_BYTES, SchemaRefused, contains_nul, normalise_schema
from .protocol.shared_cache import GuardedCache, SharedEraCache, ToolsCache
from .protocol.tasks import TaskError, TaskOptions, TaskState
from .protocol.templates import TemplateError, expand_template, template_matches
from .wire.connection import ConnectionSettings
from .wire.deadline import MINIMUM_LEG_SECONDS, MonotonicClock, OperationDeadline
from .wire.errors import AuthorizationError, McpTransportError
from .wire.redaction import redact
from .wire.text import NAME_LIMIT, clean, encodable

# The rule for the Django side (tests/test_import_graph.py holds it): it imports the client from
# this module, and OAuth from ``nr_llm.mcp.oauth``'s face, never a module below either.
__all__ = [
    # The client, how it connects and where: what a site's code and the app build.
    "ConnectionSettings",
    "Endpoint",
    "AuthPlacement",
    "McpClient",
    # What an operation answers.
    "CallOutcome",
    "ConnectionReport",
    "Features",
    "Completion",
    "PromptMessage",
    "PromptOutcome",
    # A server's question during a call (elicitation) and its answer.
    "ElicitationAnswer",
    "ElicitationRequest",
    "Elicitor",
    # A tool's answer: its content blocks, their caps, and the checks an answer passes.
    "Block",
    "ContentLimits",
    "DEFAULT_BLOCK_BYTES",
    "DEFAULT_TOTAL_BYTES",
    "conform_outcome",
    "masked_outcome",
    "data_url",
    "json_text",
    # A tool's definition: its local name and its schemas, as the catalogue stores them.
    "LOCAL_NAME_RE",
    "InvalidToolName",
    "checked_local_name",
    "MAX_ENCODED_BYTES",
    "SchemaRefused",
    "contains_nul",
    "normalise_schema",
    "ReferenceProblem",
    "resolve_reference",
    # Long calls: progress, server tasks, and whether a failed call may have run.
    "Progress",
    "ProgressListener",
    "TaskError",
    "TaskOptions",
    "TaskState",
    "may_have_run",
    # Resource templates, and the stream a catalogue watch listens on.
    "TemplateError",
    "expand_template",
    "template_matches",
    "listen",
    # Caches shared between processes (the app backs them with Django's cache).
    "GuardedCache",
    "SharedEraCache",
    "ToolsCache",
    # From the wire (never imported directly): cleaning remote text, masking secrets, the
    # deadline and the errors it raises.
    "MINIMUM_LEG_SECONDS",
    "NAME_LIMIT",
    "AuthorizationError",
    "McpTransportError",
    "MonotonicClock",
    "OperationDeadline",
    "clean",
    "encodable",
    "redact",
]
