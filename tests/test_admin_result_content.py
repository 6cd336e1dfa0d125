"""The admin shows what a tool answered beyond text: images (as <img> from a data URL, image
types only, sized) and structured content pretty-printed, on the Try page and the call's page;
hostile answers are never rendered unescaped."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator

import pytest
from django.urls import reverse

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool, ToolCall
from tests.factories import McpServerFactory
from tests.peers import running, sdk_server
from tests.peers.result_server import PNG

# The ledger writes on a connection of its own: the rows must be committed to be seen.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture
def peers(settings) -> Iterator[None]:
    """The SDK demo server ("demo") and the crafted-answer server ("results"), every tool enabled."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with (
        sdk_server("--stateless") as url,
        running([sys.executable, "-m", "tests.peers.result_server"]) as port,
    ):
        for identifier, address in (("demo", url), ("results", f"http://127.0.0.1:{port}/mcp")):
            server = McpServerFactory.create(identifier=identifier, name=identifier.title(), url=address)
            assert import_catalogue(server).ok
        McpTool.objects.update(enabled=True)
        yield


def _try(client, tool_name: str, arguments: str = "{}") -> str:
    tool = McpTool.objects.get(tool_name=tool_name)
    url = reverse("admin:nr_llm_mcptool_try", args=[tool.pk])
    return str(client.post(url, {"arguments": arguments}).content.decode())


def test_the_try_page_shows_an_image_from_a_data_url_sized(admin_client, peers) -> None:
    """The pixel tool's PNG is an <img> whose src is its data URL, with a fixed size."""
    page = _try(admin_client, "mcp_demo_pixel")
    (image,) = re.findall(r"<img [^>]*>", page.split('id="try-tool-result"')[1])
    assert 'src="data:image/png;base64,' in image
    assert 'width="160"' in image and 'height="160"' in image


def test_the_try_page_pretty_prints_structured_content_beside_the_text(admin_client, peers) -> None:
    """add's structured content is shown indented, next to the text a model reads."""
    page = _try(admin_client, "mcp_demo_add", '{"a": 2, "b": 3}')
    assert '<pre id="try-tool-text">5.0</pre>' in page
    assert '<pre id="try-tool-structured">{\n  &quot;result&quot;: 5.0\n}</pre>' in page


def test_hostile_blocks_never_reach_the_page_as_markup(admin_client, peers) -> None:
    """Of the crafted answer only the PNG is an <img>; the SVG, the MIME injections and the
    javascript: link is kept only as escaped text (never an href), as are the notes."""
    page = _try(admin_client, "mcp_results_pictures")
    result = page.split('id="try-tool-result"')[1]
    images = re.findall(r"<img [^>]*>", result)
    assert images == [
        f'<img src="data:image/png;base64,{PNG}" alt="image 1 of the answer" width="160" height="160" '
        'style="object-fit: contain; border: 1px solid var(--hairline-color); margin: 0 10px 10px">'
    ]
    assert "onerror=" not in result.replace("onerror=&quot;", "")
    assert 'href="javascript' not in result and "svg+xml;base64" not in result
    assert "image/svg+xml can carry script" in result


def test_the_calls_page_shows_the_kept_structured_content_pretty_printed(
    admin_client, peers, settings
) -> None:
    """The ledger's preview keeps the structured content; the call's page shows it indented in a
    block of its own."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 300
    _try(admin_client, "mcp_results_weather")
    call = ToolCall.objects.get(tool_name="mcp_results_weather")
    page = admin_client.get(reverse("admin:nr_llm_toolcall_change", args=[call.pk])).content.decode()
    assert '<pre class="nr-llm-structured">{\n  &quot;temperature&quot;: 33,' in page
