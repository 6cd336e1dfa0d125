"""Remote and operator text holding markup renders as text on every admin page that shows it."""

import pytest
from django.urls import reverse

from .factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db

SERVER_NAME = "<script>alert('server')</script>"
TOOL_TEXT = "<script>alert('tool')</script>"
SCHEMA = {
    "type": "object",
    "properties": {"<script>alert('schema')</script>": {"type": "string", "description": TOOL_TEXT}},
}


@pytest.fixture
def tool():
    server = McpServerFactory.create(name=SERVER_NAME, description=TOOL_TEXT)
    return McpToolFactory.create(
        server=server,
        enabled=True,
        description=TOOL_TEXT,
        input_schema=SCHEMA,
        remote_annotations={"title": TOOL_TEXT},
    )


@pytest.mark.parametrize(
    "page",
    ["server-changelist", "server-change", "tool-changelist", "tool-change", "try-tool"],
)
def test_markup_from_a_server_or_its_tools_is_shown_escaped(admin_client, tool, page):
    """Each page holding the server's name or a tool's description/schema/annotations escapes
    them: no script element of theirs, and their text visible as text."""
    url = {
        "server-changelist": reverse("admin:nr_llm_mcpserver_changelist"),
        "server-change": reverse("admin:nr_llm_mcpserver_change", args=[tool.server.pk]),
        "tool-changelist": reverse("admin:nr_llm_mcptool_changelist"),
        "tool-change": reverse("admin:nr_llm_mcptool_change", args=[tool.pk]),
        "try-tool": reverse("admin:nr_llm_mcptool_try", args=[tool.pk]),
    }[page]
    html = admin_client.get(url).content.decode()
    assert "<script>alert(" not in html
    assert "&lt;script&gt;alert(" in html
