"""MCP over TLS by name, as hosted servers are reached: the URL's host is the TLS identity.

The client dials the address its resolver gave for the name, sends the name as SNI and
verifies the certificate for the name (never for the address it dialled). Real peers on
127.0.0.1: the official SDK 2.x server under uvicorn, and tests/peers/adversarial.py over
TLS for the certificates a client must refuse, each with a certificate of this session's
test CA (tests/tls.py) unless the case is about another issuer.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from tests.peers import running
from tests.tls import (
    NAMES,
    TestAuthority,
    log_entries,
    peer_log,
    resolve_test_names,
    sdk_server_tls,
    tls_adversary,
    tls_client,
)

pytestmark = pytest.mark.e2e

BUDGET = 2


def _client(tls: TestAuthority, **kwargs: Any) -> McpClient:
    return tls_client(tls, **kwargs)


@pytest.mark.parametrize(
    ("flags", "era"), [((), "modern"), (("--no-discover",), "handshake")], ids=["2026-07-28", "handshake"]
)
def test_the_sdk_server_by_name_over_tls_in_both_eras(
    tls: TestAuthority, flags: tuple[str, ...], era: str
) -> None:
    """ping, list_tools and call_tool against the SDK server at https://mcp.test:PORT/mcp: every
    connection sent SNI for mcp.test and was verified for it (a certificate for mcp.test only)."""
    with sdk_server_tls(tls, "mcp.test", *flags) as url:
        client = _client(tls)
        endpoint = Endpoint(identifier="named", url=url)
        report = client.ping(endpoint)
        assert report.reachable, report.error
        assert report.era == era
        assert {"echo", "add"} <= {tool["name"] for tool in client.list_tools(endpoint)}
        assert client.call_tool(endpoint, "echo", {"text": "over tls"}).text == "over tls"
        names = peer_log(url, tls, "/sni")
        served = peer_log(url, tls, "/requests")
    # Every handshake but the test's own log reads named mcp.test; none came without SNI.
    assert names and set(names) == {"mcp.test"}
    assert served and all(entry["http"] in ("POST", "DELETE") for entry in served)


def test_a_certificate_for_another_name_is_refused_as_tls(tls: TestAuthority) -> None:
    """A trusted issuer, a valid certificate, but for other.test: refused as ``tls`` naming the
    server and the host, before any HTTP request."""
    with tls_adversary(tls.issue("other.test")) as (port, log):
        report = _client(tls).ping(
            Endpoint(identifier="wrongname", url=f"https://mcp.test:{port}/fine/0/mcp")
        )
        seen = log_entries(log)
    assert report.failure is not None and report.failure.kind == "tls"
    assert "'wrongname'" in report.error and "not valid for mcp.test" in report.error
    assert {"sni": "mcp.test"} in seen and not [entry for entry in seen if "request" in entry]


def test_an_untrusted_issuer_is_refused_as_tls(tls: TestAuthority) -> None:
    """A certificate for the right name from a CA nobody trusts here: ``tls``, saying how to trust one."""
    with tls_adversary(tls.untrusted("mcp.test")) as (port, log):
        report = _client(tls).ping(Endpoint(identifier="stranger", url=f"https://mcp.test:{port}/fine/0/mcp"))
        seen = log_entries(log)
    assert report.failure is not None and report.failure.kind == "tls"
    assert "'stranger'" in report.error and "does not trust" in report.error
    assert "NR_LLM_MCP_CA_BUNDLE" in report.error
    assert {"sni": "mcp.test"} in seen and not [entry for entry in seen if "request" in entry]


def test_an_expired_certificate_is_refused_as_tls(tls: TestAuthority) -> None:
    """The right name, the trusted CA, but past its notAfter: ``tls``, saying it expired."""
    with tls_adversary(tls.issue("mcp.test", expired=True)) as (port, log):
        report = _client(tls).ping(Endpoint(identifier="stale", url=f"https://mcp.test:{port}/fine/0/mcp"))
        seen = log_entries(log)
    assert report.failure is not None and report.failure.kind == "tls"
    assert "'stale'" in report.error and "expired" in report.error
    assert not [entry for entry in seen if "request" in entry]


def test_an_impostor_valid_only_for_the_address_gets_no_request_and_no_token(tls: TestAuthority) -> None:
    """A server whose certificate is valid for 127.0.0.1 (the address mcp.test resolves to) but
    not for mcp.test: refused as ``tls``; it receives SNI for the name and no HTTP request, so
    the bearer token never reaches it. (The IP once was the TLS identity, and it got the token.)"""
    with tls_adversary(tls.issue("127.0.0.1")) as (port, log):
        endpoint = Endpoint(
            identifier="impostor",
            url=f"https://mcp.test:{port}/record/0/mcp",
            credential="secret-token-123",
            auth_placement="bearer",
        )
        with pytest.raises(McpTransportError) as caught:
            _client(tls).call_tool(endpoint, "echo", {"text": "x"})
        seen = log_entries(log)
    assert caught.value.kind == "tls" and "'impostor'" in str(caught.value)
    assert "secret-token-123" not in str(caught.value) + repr(caught.value)
    assert {"sni": "mcp.test"} in seen and not [entry for entry in seen if "request" in entry]


def test_an_ip_literal_url_verifies_the_address(tls: TestAuthority) -> None:
    """https://127.0.0.1:PORT with a certificate for 127.0.0.1: verified for the address (no
    SNI is sent for an address, as TLS wants), and the call goes through."""
    with tls_adversary(tls.issue("127.0.0.1")) as (port, log):
        outcome = _client(tls).call_tool(
            Endpoint(identifier="literal", url=f"https://127.0.0.1:{port}/fine/0/mcp"), "echo"
        )
        seen = log_entries(log)
    assert outcome.text == "done"
    assert {"sni": None} in seen and [entry for entry in seen if "request" in entry]


def test_a_name_whose_first_address_refuses_is_dialled_at_the_next_and_verified_for_the_name(
    tls: TestAuthority,
) -> None:
    """two.test resolves to 127.0.0.2 (nothing listens: refused) and then 127.0.0.1: the second
    is dialled, SNI is two.test and the certificate (for two.test only) is verified for it."""
    assert NAMES["two.test"][0] == "127.0.0.2"
    with tls_adversary(tls.issue("two.test")) as (port, log):
        outcome = _client(tls).call_tool(
            Endpoint(identifier="two", url=f"https://two.test:{port}/fine/0/mcp"), "echo"
        )
        seen = log_entries(log)
    assert outcome.text == "done"
    assert {"sni": "two.test"} in seen


def _timed(operation: Any) -> tuple[float, McpTransportError]:
    started = time.monotonic()
    with pytest.raises(McpTransportError) as caught:
        operation()
    return time.monotonic() - started, caught.value


@pytest.mark.parametrize("flag", ["--tls-stall", "--tls-trickle"], ids=["stalled", "trickling"])
def test_a_handshake_that_stalls_or_trickles_ends_within_budget_plus_one_second(
    tls: TestAuthority, flag: str
) -> None:
    """By name, a server that never finishes the handshake (silent after the ClientHello, or one
    byte every 0.2 s so no socket wait times out): ``timeout`` within budget + 1 s."""
    with running([sys.executable, "-m", "tests.peers.adversarial", flag]) as port:
        endpoint = Endpoint(identifier="hostile", url=f"https://mcp.test:{port}/mcp", budget_seconds=BUDGET)
        elapsed, error = _timed(lambda: _client(tls).call_tool(endpoint, "echo"))
    assert error.kind == "timeout" and "'hostile'" in str(error)
    assert BUDGET - 0.1 <= elapsed < BUDGET + 1


def test_the_environment_s_ca_bundle_is_not_trusted(
    tls: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQUESTS_CA_BUNDLE and SSL_CERT_FILE naming the test CA change nothing: without
    ``ca_bundle`` the client trusts what requests ships, so the test CA's server is ``tls``."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls.bundle))
    monkeypatch.setenv("SSL_CERT_FILE", str(tls.bundle))
    with tls_adversary(tls.issue("mcp.test")) as (port, _log):
        client = McpClient(
            connection=ConnectionSettings(allow_private_networks=True, resolver=resolve_test_names)
        )
        report = client.ping(Endpoint(identifier="envtrust", url=f"https://mcp.test:{port}/fine/0/mcp"))
    assert report.failure is not None and report.failure.kind == "tls" and "does not trust" in report.error


def test_a_plain_http_server_behind_an_https_url_is_a_tls_error(tls: TestAuthority) -> None:
    """https:// to a server that speaks plain HTTP: ``tls``, hinting at http://."""
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        report = _client(tls).ping(Endpoint(identifier="plain", url=f"https://mcp.test:{port}/fine/0/mcp"))
    assert report.failure is not None and report.failure.kind == "tls"
    assert "'plain'" in report.error and "handshake failed" in report.error
