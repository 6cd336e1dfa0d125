"""A server that quotes the credential back ("invalid credential <what you sent>") never gets
it onto an admin page, into a message or into a tool result: against a real peer on 127.0.0.1."""

import sys
import time

import pytest
from django.urls import reverse

from nr_llm import tools
from nr_llm.authorization.store import DatabaseGrantStore
from nr_llm.catalogue import import_catalogue
from nr_llm.governance.preview import preview_of
from nr_llm.mcp.oauth import Grant
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.wire.redaction import MASK, redact
from nr_llm.models import McpServer, ToolCall
from nr_llm.servers.connection import test_connection
from tests.peers import running

from ..admin_clients import messages_of, post_action
from ..factories import McpServerFactory, McpToolFactory

SECRET = "tok-echoed-ABCDEF-123456"
ACCESS_TOKEN = "at-echoed-0a1b2c3d4e5f6a7b"
REFRESH_TOKEN = "rt-kept-9f8e7d6c5b4a3f2e"


def test_redact_masks_every_occurrence():
    """Each copy of the secret is replaced; the rest of the text stays."""
    assert redact(f"a {SECRET} b {SECRET}", SECRET) == f"a {MASK} b {MASK}"


def test_redact_masks_the_start_of_a_secret_cut_off_by_clipping():
    """A message clipped mid-secret ("… tok-ech…") does not keep the secret's first characters."""
    assert redact(f"invalid {SECRET[:9]}…", SECRET) == f"invalid {MASK}…"


def test_redact_leaves_text_alone_without_a_secret_or_a_match():
    """No credential configured, or short coincidental overlaps, change nothing."""
    assert redact("invalid tok…", None) == "invalid tok…"
    assert redact("ends in to…", SECRET) == "ends in to…"


@pytest.fixture(scope="module")
def tattle_url():
    with running([sys.executable, "-m", "tests.peers.adversarial"]) as port:
        yield f"http://127.0.0.1:{port}/tattle/0/mcp"


@pytest.fixture
def server(tattle_url, settings, transactional_db):
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="tattle", url=tattle_url, auth_placement="bearer")
    server.set_credential(SECRET)
    server.save()
    return server


@pytest.mark.e2e
def test_an_import_refusal_stores_and_shows_no_credential(server, admin_client):
    """import_error, the changelist and the change page say the server's words, masked."""
    report = import_catalogue(server)
    assert "invalid credential Bearer" in report.refused
    assert SECRET not in report.refused and MASK in report.refused
    server.refresh_from_db()
    assert SECRET not in server.import_error
    for url in (
        reverse("admin:nr_llm_mcpserver_changelist"),
        reverse("admin:nr_llm_mcpserver_change", args=[server.pk]),
    ):
        assert SECRET not in admin_client.get(url).content.decode()


@pytest.mark.e2e
def test_admin_actions_show_no_credential(server, admin_client):
    """The connection test's and the import's messages carry the failure, masked."""
    changelist = reverse("admin:nr_llm_mcpserver_changelist")
    for action in ("test_connection_action", "import_catalogue_action"):
        response = post_action(admin_client, changelist, action, [server])
        texts = [text for _, text in messages_of(response)]
        assert any("invalid credential" in text for text in texts), texts
        assert SECRET not in response.content.decode()


@pytest.mark.e2e
def test_a_tool_result_carries_no_credential(server):
    """The model reads that the call failed and why, never the secret."""
    McpToolFactory.create(server=server, remote_name="echo", enabled=True)
    result = tools.execute("mcp_tattle_echo", {})
    assert result.is_error and "invalid credential" in result.text
    assert SECRET not in result.text


@pytest.mark.e2e
def test_the_try_tool_page_shows_no_credential(server, admin_client):
    """The operator's trial call shows the failure, masked."""
    tool = McpToolFactory.create(server=server, remote_name="echo", enabled=True)
    page = admin_client.post(reverse("admin:nr_llm_mcptool_try", args=[tool.pk]), {"arguments": "{}"})
    text = page.content.decode()
    assert "invalid credential" in text
    assert SECRET not in text
    assert McpServer.objects.get(pk=server.pk).credential_ciphertext not in text


@pytest.fixture
def oauth_server(tattle_url, settings, transactional_db):
    """An OAuth server row with a stored, unexpired grant: its access token is what tattle quotes."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(
        identifier="oauthtattle", url=tattle_url, auth_placement="oauth", requires_approval=False
    )
    DatabaseGrantStore().save(
        server.identifier,
        Grant(
            access_token=ACCESS_TOKEN,
            refresh_token=REFRESH_TOKEN,
            issuer="http://127.0.0.1:9",
            token_endpoint="http://127.0.0.1:9/token/",
            resource=tattle_url,
            client=ClientRegistration("http://127.0.0.1:9", "client-id"),
            expires_at=time.time() + 3600,
            mcp_url=tattle_url,
        ),
    )
    return server


@pytest.mark.e2e
def test_an_oauth_access_token_a_server_quotes_reaches_no_result_row_or_page(oauth_server, admin_client):
    """The token quoted in a JSON-RPC error is masked in the tool result, the ledger's kept
    answer, import_error and the connection test's message (issue 25, item 7)."""
    McpToolFactory.create(server=oauth_server, remote_name="echo", enabled=True)
    result = tools.execute("mcp_oauthtattle_echo", {})
    assert result.is_error and f"invalid credential Bearer {MASK}" in result.text, result.text
    kept = preview_of(ToolCall.objects.get(tool_name="mcp_oauthtattle_echo"))
    assert "invalid credential Bearer" in kept and ACCESS_TOKEN not in kept

    report = import_catalogue(oauth_server)
    oauth_server.refresh_from_db()
    assert f"Bearer {MASK}" in report.refused and ACCESS_TOKEN not in oauth_server.import_error

    tested = test_connection(oauth_server)
    assert f"Bearer {MASK}" in tested.report.error and ACCESS_TOKEN not in tested.report.error
    for text in (result.text, kept, report.refused, oauth_server.import_error, tested.report.error):
        assert ACCESS_TOKEN not in text and REFRESH_TOKEN not in text
