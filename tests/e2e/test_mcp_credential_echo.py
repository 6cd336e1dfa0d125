"""No credential of an operation reaches what the client returns, whatever path the server's
text takes (issue 25, item 7): an OAuth access token quoted in a JSON-RPC error reached the
error (so a tool result, the ledger, ``import_error``, the connection test); only a successful
result's text was masked.

Over TLS by name against tests/peers/adversarial.py: ``tattle`` answers every request with a
JSON-RPC error quoting the credential it was sent, as a careless server's "invalid token …" does.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from nr_llm.mcp import Endpoint, McpTransportError
from nr_llm.mcp.oauth import ClientConfig, Grant, MemoryGrantStore, OAuthSettings
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.redaction import MASK
from tests.tls import TestAuthority, tls_adversary, tls_client

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def origin(tls: TestAuthority) -> Iterator[str]:
    with tls_adversary(tls.issue("mcp.test")) as (port, _log):
        yield f"https://mcp.test:{port}"


def _oauth_endpoint(url: str, access: str, refresh: str) -> Endpoint:
    store = MemoryGrantStore()
    store.save(
        "tattle",
        Grant(
            access_token=access,
            refresh_token=refresh,
            issuer="https://auth.test",
            token_endpoint="https://auth.test/token/",
            resource=url,
            client=ClientRegistration("https://auth.test", "client-id"),
            expires_at=time.time() + 3600,
            mcp_url=url,
        ),
    )
    return Endpoint(
        identifier="tattle", url=url, budget_seconds=5, oauth=OAuthSettings(ClientConfig(), store)
    )


def test_an_oauth_access_token_quoted_in_an_error_is_masked_on_every_path(
    tls: TestAuthority, origin: str
) -> None:
    """call_tool's and list_tools's errors and ping's report quote the server's words with the
    token masked; the error's chain holds no copy either."""
    access, refresh = f"at-{secrets.token_hex(12)}", f"rt-{secrets.token_hex(12)}"
    endpoint = _oauth_endpoint(f"{origin}/tattle/0/mcp", access, refresh)
    client = tls_client(tls)
    failures: list[McpTransportError] = []
    for operation in (lambda: client.call_tool(endpoint, "echo", {}), lambda: client.list_tools(endpoint)):
        with pytest.raises(McpTransportError) as caught:
            operation()
        failures.append(caught.value)
    report = client.ping(endpoint)
    assert report.failure is not None
    failures.append(report.failure)
    for failure in failures:
        assert f"invalid credential Bearer {MASK}" in str(failure), failure
        cause: BaseException | None = failure
        while cause is not None:
            assert access not in str(cause) and refresh not in str(cause)
            cause = cause.__cause__ or cause.__context__
    assert access not in report.error and f"Bearer {MASK}" in report.error


def test_a_static_credential_quoted_in_an_error_is_masked_by_the_client(
    tls: TestAuthority, origin: str
) -> None:
    """A configured header credential, quoted back: masked by the client itself, before any
    caller sees the error."""
    credential = f"key-{secrets.token_hex(12)}"
    endpoint = Endpoint(
        identifier="tattle",
        url=f"{origin}/tattle/0/mcp",
        budget_seconds=5,
        credential=credential,
        auth_placement="header",
        auth_header_name="X-Api-Key",
    )
    with pytest.raises(McpTransportError) as caught:
        tls_client(tls).call_tool(endpoint, "echo", {})
    assert f"invalid credential {MASK}" in str(caught.value) and credential not in str(caught.value)
