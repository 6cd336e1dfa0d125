"""The MCP server changelist: columns, filters, search, and what its HTML never carries."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from nr_llm.models import ImportStatus, McpServer

from .factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")


def _rows(admin_client, query=""):
    response = admin_client.get(CHANGELIST + query)
    assert response.status_code == 200
    # Names carry line-break opportunities (<wbr>) after "_"; the text is what is read.
    return response.content.decode().replace("<wbr>", "")


def test_changelist_shows_every_column_for_a_row(admin_client):
    """One row carries contact with latency, transport, auth, tool counts, data class, import and error."""
    server = McpServerFactory.create(
        name="Docs",
        identifier="docs",
        auth_placement="header",
        auth_header_name="X-Api-Key",
        import_status=ImportStatus.PARTIAL,
        last_imported=timezone.now() - timedelta(hours=2),
        import_error="tool 'x' skipped: " + "schema too deep " * 20,
    )
    McpServer.objects.filter(pk=server.pk).update(
        last_contact=timezone.now() - timedelta(minutes=3), last_latency_ms=42
    )
    McpToolFactory.create(server=server, enabled=True)
    McpToolFactory.create(server=server)
    McpToolFactory.create(server=server, orphaned=True)

    page = _rows(admin_client)
    assert "3\xa0minutes ago · 42 ms" in page
    assert "Streamable HTTP" in page
    assert "Named header (X-Api-Key)" in page
    assert "1 / 3 enabled, 1 orphaned" in page
    assert f"?server__id__exact={server.pk}" in page
    assert "Public content" in page
    assert "Partial · 2\xa0hours ago" in page
    assert "tool &#x27;x&#x27; skipped: schema too deep" in page
    assert server.import_error not in page.replace("&#x27;", "'")


def test_change_page_shows_the_whole_import_error(admin_client):
    """The changelist clips the error; the change page shows all of it."""
    error = "refused: " + "a very long reason " * 30
    server = McpServerFactory.create(import_status=ImportStatus.ERROR, import_error=error)
    page = admin_client.get(reverse("admin:nr_llm_mcpserver_change", args=[server.pk])).content.decode()
    assert error.strip() in page


def test_undeclared_data_class_and_unknown_auth_are_flagged(admin_client):
    """A row without a data class and with an unknown stored auth value carries both warnings."""
    server = McpServerFactory.create(data_class="")
    McpServer.objects.filter(pk=server.pk).update(auth_placement="oauth2")
    page = _rows(admin_client)
    assert "undeclared: imports refused" in page
    assert "unknown: oauth2" in page


def test_filters_narrow_by_enabled_import_status_and_data_class(admin_client):
    """Each of the three filters keeps only matching servers."""
    McpServerFactory.create(identifier="on_ok", enabled=True, import_status=ImportStatus.OK)
    McpServerFactory.create(identifier="off_err", enabled=False, import_status=ImportStatus.ERROR)
    McpServerFactory.create(identifier="code", data_class="sourceCode")

    for query, present, absent in [
        ("?enabled__exact=0", "off_err", "on_ok"),
        ("?import_status__exact=ok", "on_ok", "off_err"),
        ("?data_class__exact=sourceCode", "code", "on_ok"),
    ]:
        page = _rows(admin_client, query)
        assert f">{present}<" in page, query
        assert f">{absent}<" not in page, query


@pytest.mark.parametrize("term", ["needle", "Needle Server", "needle.example"])
def test_search_matches_identifier_name_and_url(admin_client, term):
    """Search finds a server by identifier, by name and by URL."""
    McpServerFactory.create(identifier="needle", name="Needle Server", url="https://needle.example/mcp")
    McpServerFactory.create(identifier="hay", name="Hay", url="https://hay.example/mcp")
    page = _rows(admin_client, f"?q={term}")
    assert ">needle<" in page
    assert ">hay<" not in page


def test_remote_and_operator_text_is_escaped(admin_client):
    """A name or description holding <script> renders as text, not markup."""
    McpServerFactory.create(name="<script>alert('name')</script>", description="<script>x</script>")
    page = _rows(admin_client)
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(" in page


def test_change_page_labels_read_as_words(admin_client):
    """Observed fields carry human labels: units in parentheses, no field names."""
    server = McpServerFactory.create()
    page = admin_client.get(reverse("admin:nr_llm_mcpserver_change", args=[server.pk])).content.decode()
    assert "Last latency (ms):" in page
    assert "Import task:" in page
    assert "none waiting or running" in page
    assert "latency ms" not in page.lower()
