"""One worker process of the two-process refresh test: take a bearer token for a server the
way an MCP operation does, at an agreed moment, and call the protected MCP server with it.

``python -m tests.authorization.refresh_worker <identifier> <start epoch seconds>`` prints
one JSON line: the SHA-256 of the token it used (never the token) and the MCP answer's status.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time


def main(identifier: str, start_at: float) -> None:
    import django

    django.setup()
    from nr_llm.authorization.service import oauth_settings
    from nr_llm.mcp import ConnectionSettings
    from nr_llm.mcp.oauth import OperationTokens
    from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
    from nr_llm.models import McpServer
    from tests.oauth_peers import mcp_request

    server = McpServer.objects.get(identifier=identifier)
    settings = oauth_settings(server)
    time.sleep(max(start_at - time.time(), 0))
    deadline = OperationDeadline(server.budget_seconds, MonotonicClock(), identifier)
    tokens = OperationTokens(
        identifier, server.url, settings, deadline, ConnectionSettings(allow_private_networks=True)
    )
    try:
        token = tokens.bearer()
    finally:
        tokens.close()
    assert token is not None
    answer = mcp_request(server.url, "tools/call", {"name": "whoami", "arguments": {}}, token=token)
    print(json.dumps({"token": hashlib.sha256(token.encode()).hexdigest(), "status": answer.status_code}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
