"""Shared setup of the authorization tests: an OAuth server row, an operator, the Connect steps."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from nr_llm.models import McpServer, OAuthGrantRecord, PendingAuthorization
from nr_llm.servers import credentials
from tests.oauth_peers import OAuthPeers

PUBLIC_BASE_URL = "http://127.0.0.1:8000"
SETTINGS = {"NR_LLM_PUBLIC_BASE_URL": PUBLIC_BASE_URL, "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": True}


def oauth_server(peers: OAuthPeers, **fields: Any) -> McpServer:
    values: dict[str, Any] = {
        "identifier": "protected",
        "name": "Protected",
        "url": peers.mcp.url,
        "auth_placement": "oauth",
        "enabled": True,
        "data_class": "publicContent",
        # These tests exercise authorization; the approval step has its own (tests/governance).
        "requires_approval": False,
        **fields,
    }
    return McpServer.objects.create(**values)


def operator(username: str = "root") -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser(username, password="pw"))
    return client


def press_connect(client: Client, server: McpServer) -> Any:
    return client.post(reverse("admin:nr_llm_mcpserver_oauth_connect", args=[server.pk]))


def pending_secrets() -> tuple[str, str]:
    """(state, PKCE verifier) of the one pending authorization, read as a store owner could."""
    row = PendingAuthorization.objects.get()
    data = json.loads(credentials.decrypt(row.payload_ciphertext))
    return data["state"], data["code_verifier"]


def callback_path(location: str) -> str:
    """The path and query of the authorization server's redirect, for the Django test client."""
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}" == PUBLIC_BASE_URL, location
    return f"{parts.path}?{parts.query}"


def stored_record(server: McpServer) -> OAuthGrantRecord | None:
    return OAuthGrantRecord.objects.filter(server=server).first()


def nothing_stored(server: McpServer) -> bool:
    record = stored_record(server)
    return record is None or not (record.access_token_ciphertext or record.refresh_token_ciphertext)
