"""The OAuth-protected MCP peer answers as an MCP resource server should.

The official SDK's server, checking tokens by introspection at the authorization-server
peer; driven with plain ``requests`` (raw JSON-RPC POSTs, no nr_llm code), on 127.0.0.1.
"""

from __future__ import annotations

import re

import pytest
import requests

from tests.oauth_peers import REQUEST_SECONDS, OAuthPeers, mcp_request

pytestmark = pytest.mark.e2e


def _client_credentials_token(peers: OAuthPeers, scope: str, resource: str | None) -> str:
    client = peers.auth.machine_client
    assert client.client_secret is not None
    data = {"grant_type": "client_credentials", "scope": scope}
    if resource is not None:
        data["resource"] = resource
    answer = requests.post(
        peers.auth.token_endpoint,
        data=data,
        auth=(client.client_id, client.client_secret),
        timeout=REQUEST_SECONDS,
    )
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token


def _challenge(answer: requests.Response) -> dict[str, str]:
    header = answer.headers["WWW-Authenticate"]
    assert header.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', header))


def test_protected_resource_metadata_names_the_authorization_server(oauth_peers):
    """RFC 9728 document at the path-based URL: this /mcp as resource, the peer's exact issuer."""
    answer = requests.get(oauth_peers.mcp.resource_metadata_url, timeout=REQUEST_SECONDS)
    assert answer.status_code == 200
    metadata = answer.json()
    assert metadata["resource"] == oauth_peers.mcp.url
    assert metadata["authorization_servers"] == [oauth_peers.auth.issuer]
    assert metadata["scopes_supported"] == [oauth_peers.mcp.required_scope]
    assert metadata["bearer_methods_supported"] == ["header"]


def test_no_token_or_an_unknown_token_is_401_with_a_challenge(oauth_peers):
    """Without a token, or with one the authorization server never issued: 401 and where to look."""
    for token in (None, "not-a-token-the-server-issued"):
        answer = mcp_request(oauth_peers.mcp.url, "tools/list", token=token)
        assert answer.status_code == 401
        challenge = _challenge(answer)
        assert challenge["error"] == "invalid_token"
        assert challenge["resource_metadata"] == oauth_peers.mcp.resource_metadata_url


def test_tools_call_with_a_user_token_answers_for_that_user(oauth_peers):
    """A token from the authorization-code grant calls whoami; the answer names the user and client."""
    auth = oauth_peers.auth
    tokens = auth.authorization_code_tokens(auth.public_client, resource=oauth_peers.mcp.url)
    before = len(auth.requests_seen("introspect"))

    answer = mcp_request(
        oauth_peers.mcp.url, "tools/call", {"name": "whoami", "arguments": {}}, token=tokens["access_token"]
    )

    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {
        "client_id": auth.public_client.client_id,
        "subject": auth.username,
        "scopes": ["mcp:tools"],
        "resource": oauth_peers.mcp.url,
    }
    # The MCP server asked the authorization server (no local cache).
    assert len(auth.requests_seen("introspect")) == before + 1


def test_tools_call_with_a_client_credentials_token(oauth_peers):
    """A machine token (no user) lists and calls tools."""
    token = _client_credentials_token(oauth_peers, "mcp:tools", oauth_peers.mcp.url)

    listed = mcp_request(oauth_peers.mcp.url, "tools/list", token=token)
    called = mcp_request(
        oauth_peers.mcp.url, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, token=token
    )

    assert listed.status_code == 200
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert names == {"whoami", "echo", "admin_report"}
    assert called.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_tool_needing_more_scope_is_403_insufficient_scope_until_granted(oauth_peers):
    """admin_report with mcp:tools only: 403 naming the scopes to ask for; with them, it answers."""
    mcp = oauth_peers.mcp
    narrow = _client_credentials_token(oauth_peers, mcp.required_scope, mcp.url)
    wide = _client_credentials_token(oauth_peers, f"{mcp.required_scope} {mcp.admin_scope}", mcp.url)
    call = {"name": "admin_report", "arguments": {}}

    refused = mcp_request(mcp.url, "tools/call", call, token=narrow)
    other_tool = mcp_request(mcp.url, "tools/call", {"name": "whoami", "arguments": {}}, token=narrow)
    granted = mcp_request(mcp.url, "tools/call", call, token=wide)

    assert refused.status_code == 403
    challenge = _challenge(refused)
    assert challenge["error"] == "insufficient_scope"
    assert challenge["scope"].split() == [mcp.required_scope, mcp.admin_scope]
    assert challenge["resource_metadata"] == mcp.resource_metadata_url
    assert other_tool.status_code == 200
    assert granted.status_code == 200
    assert granted.json()["result"]["isError"] is False


def test_a_token_without_the_endpoint_scope_is_403(oauth_peers):
    """Every request needs mcp:tools: a token carrying only mcp:admin is refused by the SDK itself."""
    token = _client_credentials_token(oauth_peers, oauth_peers.mcp.admin_scope, oauth_peers.mcp.url)
    answer = mcp_request(oauth_peers.mcp.url, "tools/list", token=token)
    assert answer.status_code == 403
    assert _challenge(answer)["error"] == "insufficient_scope"


def test_a_token_for_another_resource_or_for_none_is_refused(oauth_peers):
    """RFC 8707 audience: a token bound to another resource, or to no resource, is a 401."""
    elsewhere = _client_credentials_token(oauth_peers, "mcp:tools", "http://127.0.0.1:9/other-mcp")
    unbound = _client_credentials_token(oauth_peers, "mcp:tools", None)
    bound = _client_credentials_token(oauth_peers, "mcp:tools", oauth_peers.mcp.url)

    for token in (elsewhere, unbound):
        assert mcp_request(oauth_peers.mcp.url, "tools/list", token=token).status_code == 401
    assert mcp_request(oauth_peers.mcp.url, "tools/list", token=bound).status_code == 200


def test_a_revoked_token_is_refused_at_once(oauth_peers):
    """Revocation at the authorization server reaches the MCP server on the next request (introspection)."""
    auth = oauth_peers.auth
    client = auth.confidential_client
    assert client.client_secret is not None
    tokens = auth.authorization_code_tokens(client, resource=oauth_peers.mcp.url)
    assert mcp_request(oauth_peers.mcp.url, "tools/list", token=tokens["access_token"]).status_code == 200

    revoked = requests.post(
        auth.revocation_endpoint,
        data={"token": tokens["access_token"]},
        auth=(client.client_id, client.client_secret),
        timeout=REQUEST_SECONDS,
    )

    assert revoked.status_code == 200
    answer = mcp_request(oauth_peers.mcp.url, "tools/list", token=tokens["access_token"])
    assert answer.status_code == 401
    assert _challenge(answer)["error"] == "invalid_token"
