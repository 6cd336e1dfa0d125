"""A server that quotes the credential back ("invalid credential <what you sent>") never gets
it onto an admin page, into a message or into a tool result: against a real peer on 127.0.0.1."""

import sys

import pytest
from django.urls import reverse

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.mcp.redaction import MASK, redact
from nr_llm.models import McpServer
from tests.peers import running

from .admin_clients import messages_of, post_action
from .factories import McpServerFactory, McpToolFactory

SECRET = "tok-echoed-ABCDEF-123456"


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
def server(tattle_url, settings, db):
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
