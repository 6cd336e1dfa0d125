"""OAuth legs as spans, against the real peers (django-oauth-toolkit and the SDK's MCP server):
each leg a CLIENT span named by its HTTP method, no URL query, no secret anywhere in it."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import ClientConfig, MemoryGrantStore, OAuthLegs, OAuthSettings, refresh
from nr_llm.mcp.oauth.tokens import SystemWallClock
from nr_llm.mcp.wire.deadline import MonotonicClock, OperationDeadline
from tests.oauth_peers import connect_on_legs
from tests.otel import Otel, attributes_of, otel

__all__ = ["otel"]

pytestmark = pytest.mark.e2e

REDIRECT = "http://127.0.0.1:9/callback"


def _everything_recorded(span: Any) -> str:
    events = [str(event.attributes) for event in span.events]
    return " ".join([span.name, str(attributes_of(span)), span.status.description or "", *events])


def test_every_oauth_leg_is_a_client_span_without_query_or_secret(otel: Otel, oauth_peers: Any) -> None:
    """Discovery, registration, the code exchange and a refresh: one CLIENT span per leg, named
    by the method, naming the endpoint's role and its URL without a query; neither the client
    secret, the code, nor the access or refresh token appears in any span."""
    config = ClientConfig(redirect_uri=REDIRECT)
    store = MemoryGrantStore()
    deadline = OperationDeadline(30, MonotonicClock(), "peer")
    with OAuthLegs("peer", deadline, ConnectionSettings(allow_private_networks=True)) as legs:
        grant, url = connect_on_legs(legs, oauth_peers, config, store)
        renewed = refresh(legs, grant, config, SystemWallClock())
    spans = otel.spans()
    assert len(spans) >= 4
    assert {span.name for span in spans} <= {"GET", "POST"}
    assert all(span.kind is SpanKind.CLIENT for span in spans)
    roles = [attributes_of(span)["nr_llm.oauth.endpoint"] for span in spans]
    assert "token endpoint" in roles, roles
    for span in spans:
        attributes = attributes_of(span)
        assert attributes["server.address"] == "127.0.0.1"
        assert "?" not in attributes["url.full"]
        assert attributes["http.response.status_code"] < 500
    secrets = [grant.access_token, grant.refresh_token, renewed.access_token, renewed.refresh_token]
    secrets.append(grant.client.client_secret)
    recorded = " ".join(_everything_recorded(span) for span in spans)
    for secret in filter(None, secrets):
        assert secret not in recorded


def test_a_tool_call_with_a_client_credentials_token_traces_the_token_leg_and_the_call(
    otel: Otel, oauth_peers: Any
) -> None:
    """The token leg a call needs is a span beside the call's MCP spans, the token in neither."""
    machine = oauth_peers.auth.machine_client
    config = ClientConfig(
        grant="client_credentials",
        client_id=machine.client_id,
        client_secret=machine.client_secret,
        issuer=oauth_peers.auth.issuer,
    )
    store = MemoryGrantStore()
    endpoint = Endpoint(identifier="peer", url=oauth_peers.mcp.url, oauth=OAuthSettings(config, store))
    outcome = McpClient(connection=ConnectionSettings(allow_private_networks=True)).call_tool(
        endpoint, "whoami", {}
    )
    assert not outcome.is_error, outcome.text
    names = [span.name for span in otel.spans()]
    assert "tools/call whoami" in names and "POST" in names, names
    token = store.load("peer")
    recorded = " ".join(_everything_recorded(span) for span in otel.spans())
    assert token is not None and token.access_token not in recorded
    assert machine.client_secret not in recorded
