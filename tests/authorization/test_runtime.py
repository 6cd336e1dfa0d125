"""What the site does with the protocol client's ``authorization_required``.

Unit level: the error is raised by tests/fakes.FakeClient; the same path on the real peers
is in test_runtime_peers.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nr_llm import tools
from nr_llm.authorization import columns
from nr_llm.catalogue import import_catalogue
from nr_llm.mcp.wire.errors import AuthorizationError, McpTransportError
from nr_llm.models import McpServer, McpTool, OAuthGrantRecord
from nr_llm.servers.endpoints import endpoint_for
from tests.fakes import FakeClient

pytestmark = pytest.mark.django_db(transaction=True)

REFUSED = AuthorizationError(
    "authorization_required",
    "protected",
    "MCP server 'protected' needs a new authorization; an operator must connect it.",
    reason="refresh_refused",
    scopes=("mcp:tools",),
)


def _tool() -> McpTool:
    server = McpServer.objects.create(
        identifier="protected",
        name="Protected",
        url="https://mcp.example/mcp",
        auth_placement="oauth",
        enabled=True,
        data_class="publicContent",
        requires_approval=False,
    )
    return McpTool.objects.create(
        server=server,
        tool_name="protected_echo",
        remote_name="echo",
        input_schema={"type": "object"},
        enabled=True,
    )


def test_authorization_required_makes_the_tool_unavailable_and_the_server_need_reconnect() -> None:
    """The agent loop reads "unavailable … do not retry"; the admin reads "needs reconnect" and the scopes."""
    tool = _tool()
    result = tools.execute("protected_echo", {}, client=FakeClient(error=REFUSED))
    assert result.is_error
    assert "is unavailable" in result.text and "Do not retry it" in result.text
    record = OAuthGrantRecord.objects.get(server=tool.server)
    shown = columns.state(tool.server, record, datetime.now(UTC))
    assert shown.attention
    assert (
        shown.text
        == "needs reconnect: the authorization server refused to renew the grant (scopes: mcp:tools)"
    )
    assert McpServer.objects.filter(columns.needs_attention()).get() == tool.server


def test_an_ordinary_failure_does_not_ask_for_an_operator() -> None:
    """A timeout is reported as before (it may have run) and leaves the authorization state alone."""
    tool = _tool()
    error = McpTransportError("timeout", "protected", "MCP server 'protected' did not answer in time.")
    result = tools.execute("protected_echo", {}, client=FakeClient(error=error))
    assert result.is_error and "may have run 'echo'" in result.text
    assert not OAuthGrantRecord.objects.filter(server=tool.server).exclude(attention_reason="").exists()


def test_an_import_refused_for_authorization_marks_the_server() -> None:
    """Imports see the same typed error and leave the same mark."""
    tool = _tool()
    import_catalogue(tool.server, client=FakeClient(error=REFUSED))
    assert OAuthGrantRecord.objects.get(server=tool.server).attention_reason == "refresh_refused"


def test_an_oauth_server_endpoint_carries_the_grant_store_not_a_credential() -> None:
    """Operations against an OAuth server take their token from the stored grant (Endpoint.oauth)."""
    endpoint = endpoint_for(_tool().server)
    assert endpoint.oauth is not None and endpoint.credential is None
    assert endpoint.oauth.config.grant == "authorization_code"
