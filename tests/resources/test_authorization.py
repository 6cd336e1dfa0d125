"""A read, a get or a completion refused for authorization leaves the mark a tool call leaves:
the server (or on a per-user server, the actor's grant) needs reconnect. Unit level: the
error comes from a stand-in client, as in tests/authorization/test_runtime.py."""

from __future__ import annotations

from typing import Any, NoReturn

import pytest

from nr_llm import prompts, resources
from nr_llm.mcp.wire.errors import AuthorizationError
from nr_llm.models import McpFeature, McpServer, OAuthGrantRecord

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = AuthorizationError(
    "authorization_required",
    "protected",
    "MCP server 'protected' needs a new authorization; an operator must connect it.",
    reason="refresh_refused",
)


class Refusing:
    """Answers every request as the server's issuer refusing the grant's renewal."""

    def read_resource(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise REFUSED

    def get_prompt(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise REFUSED

    def complete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise REFUSED


@pytest.fixture
def server() -> McpServer:
    server = McpServer.objects.create(
        identifier="protected",
        name="Protected",
        url="https://mcp.example/mcp",
        auth_placement="oauth",
        enabled=True,
        data_class="publicContent",
        requires_approval=False,
    )
    for kind, key in (("resource", "docs://readme"), ("prompt", "greet")):
        McpFeature.objects.create(server=server, kind=kind, key=key, key_digest=key, enabled=True)
    return server


@pytest.mark.parametrize("operation", ["read", "get", "complete"])
def test_a_refused_grant_marks_the_server_needs_reconnect(server: McpServer, operation: str) -> None:
    if operation == "read":
        result: Any = resources.read("docs://readme", server="protected", client=Refusing())
    elif operation == "get":
        result = prompts.get("greet", client=Refusing())
    else:
        result = prompts.complete("greet", "name", "A", client=Refusing())
    assert (result.status, "needs a new authorization" in result.text) == ("failed", True)
    assert OAuthGrantRecord.objects.get(server=server).attention_reason == "refresh_refused"
