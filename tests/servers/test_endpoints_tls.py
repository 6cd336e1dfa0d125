"""The Django path over TLS: a server row at ``https://localhost:<port>/mcp`` and the
installation's NR_LLM_MCP_CA_BUNDLE (endpoints.mcp_client) serve ping, import and execute;
a wrong certificate is a ``tls`` error naming the server, in the admin's Test connection too.

``localhost`` goes through the system resolver (no seam here, as on a site), and the
official SDK server's certificate is for the name ``localhost`` only.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.urls import reverse

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool
from nr_llm.servers.endpoints import endpoint_for, mcp_client
from tests.tls import TestAuthority, peer_log, sdk_server_tls, tls_adversary

from ..admin_clients import messages_of, post_action
from ..factories import McpServerFactory, McpToolFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")


@pytest.fixture(scope="module")
def localhost_url(tls: TestAuthority) -> Iterator[str]:
    with sdk_server_tls(tls, "localhost", "--stateless") as url:
        yield url


@pytest.fixture(autouse=True)
def _trust_the_test_ca(settings, tls: TestAuthority) -> None:
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True  # localhost is loopback
    settings.NR_LLM_MCP_CA_BUNDLE = str(tls.bundle)


def test_ping_import_and_execute_over_https_by_name(localhost_url: str, tls: TestAuthority) -> None:
    """The row's https URL by name works for every operation, and the server saw SNI for localhost."""
    assert localhost_url.startswith("https://localhost:")
    server = McpServerFactory.create(identifier="secure", name="Secure", url=localhost_url)
    report = mcp_client().ping(endpoint_for(server))
    assert report.reachable, report.error
    assert import_catalogue(server).ok
    McpTool.objects.filter(server=server).update(enabled=True)
    assert tools.execute("mcp_secure_echo", {"text": "by name"}) == tools.ToolResult(
        "by name",
        False,
        "secure",
        content=({"type": "text", "text": "by name"},),
        structured={"result": "by name"},
    )
    assert set(peer_log(localhost_url, tls, "/sni")) == {"localhost"}


def test_without_the_setting_the_test_ca_is_not_trusted(localhost_url: str, settings) -> None:
    """Unset NR_LLM_MCP_CA_BUNDLE: only the certificates requests ships are trusted, so ``tls``."""
    settings.NR_LLM_MCP_CA_BUNDLE = None
    server = McpServerFactory.create(identifier="untrusted", url=localhost_url)
    report = mcp_client().ping(endpoint_for(server))
    assert report.failure is not None and report.failure.kind == "tls"


def test_a_wrong_certificate_is_a_tls_error_naming_the_server_in_every_path(
    admin_client, tls: TestAuthority
) -> None:
    """A certificate for another name: the admin's Test connection, an import and an execute each
    say ``tls`` in an operator's words, naming the server; nothing reaches the server."""
    with tls_adversary(tls.issue("other.test")) as (port, log):
        server = McpServerFactory.create(
            identifier="wrongcert", name="Wrong", url=f"https://localhost:{port}/fine/0/mcp"
        )
        [(level, text)] = messages_of(
            post_action(admin_client, CHANGELIST, "test_connection_action", [server])
        )
        imported = import_catalogue(server)
        McpToolFactory.create(server=server, remote_name="echo", enabled=True)
        executed = tools.execute("mcp_wrongcert_echo", {})
        seen = log.read_text()
    expected = "MCP server 'wrongcert' presented a TLS certificate that is not valid for localhost."
    assert level == "error" and text == f"Connection to wrongcert failed: {expected}"
    assert not imported.ok and expected in imported.refused
    assert executed.is_error and expected in executed.text
    assert '"request"' not in seen
