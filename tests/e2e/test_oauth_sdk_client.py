"""The official Python SDK's OAuth client against the OAuth peers: proof they interoperate.

The SDK client discovers everything itself from the MCP server's 401 (RFC 9728, RFC 8414),
registers (RFC 7591), authorizes with PKCE, calls a tool, and steps up on the 403
``insufficient_scope`` of a tool that needs more. ``approve`` plays the user's browser.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

pytestmark = pytest.mark.e2e


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def test_sdk_client_discovers_registers_authorizes_and_steps_up(oauth_peers):
    """whoami with the discovered scopes, then admin_report after a second, wider authorization."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.auth.oauth2 import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    auth, mcp = oauth_peers.auth, oauth_peers.mcp
    storage = MemoryStorage()
    authorization_urls: list[str] = []
    callbacks: list[str] = []
    registrations = len(auth.requests_seen("register"))

    async def redirect_handler(url: str) -> None:
        authorization_urls.append(url)
        callbacks.append(await anyio.to_thread.run_sync(auth.approve, url))

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(callbacks[-1]).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

    async def session() -> tuple[Any, Any]:
        provider = OAuthClientProvider(
            mcp.url,
            OAuthClientMetadata.model_validate(
                {
                    "redirect_uris": ["http://127.0.0.1:9/callback"],
                    "client_name": "official SDK client",
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                }
            ),
            storage,
            redirect_handler,
            callback_handler,
        )
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(auth=provider, timeout=20) as http,
                Client(streamable_http_client(mcp.url, http_client=http)) as client,
            ):
                return await client.call_tool("whoami", {}), await client.call_tool("admin_report", {})

    whoami, admin = anyio.run(session)

    assert whoami.is_error is False
    assert whoami.structured_content["subject"] == auth.username
    assert whoami.structured_content["resource"] == mcp.url
    assert admin.is_error is False
    assert admin.structured_content == {"result": f"admin report for {auth.username}"}
    assert len(authorization_urls) == 2  # the first grant, then the step-up
    scopes = [parse_qs(urlsplit(url).query)["scope"][0].split() for url in authorization_urls]
    # The resource metadata's scopes, plus offline_access because the server lists it.
    assert scopes[0] == ["mcp:tools", "offline_access"]
    assert mcp.admin_scope in scopes[1]
    assert len(auth.requests_seen("register")) == registrations + 1
