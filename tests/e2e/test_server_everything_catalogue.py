"""The reference server-everything's catalogue imports with every tool and no keyword lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpTool
from nr_llm.servers.endpoints import endpoint_for, mcp_client
from nr_llm.tools.offering import FORMATS
from tests.factories import McpServerFactory
from tests.peers import ROOT, running
from tests.schema_corpus import lost_keywords

pytestmark = [pytest.mark.django_db, pytest.mark.e2e]

PEERS = ROOT / "tests" / "e2e" / "peers"
EVERYTHING = PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = ["node", "-r", str(PEERS / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]
    with running(command) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_every_tool_is_imported_and_offered_with_no_keyword_lost(url, settings):
    """Each advertised tool is imported (no skip reason) and, enabled, offered in every format
    with every counted keyword of its advertised schema."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="everything", name="Everything", url=url)
    advertised = {tool["name"]: tool["inputSchema"] for tool in mcp_client().list_tools(endpoint_for(server))}
    report = import_catalogue(server)
    assert (report.ok, report.skip_reasons, report.imported) == (True, (), len(advertised))
    McpTool.objects.update(enabled=True)
    for format in FORMATS:
        offered = tools.definitions(format)
        schemas = {
            (o.get("function", o)["name"]): o.get("function", o).get("parameters", o.get("input_schema"))
            for o in offered
        }
        lost = {
            name: lost_keywords(schema, schemas[f"mcp_everything_{name}"])
            for name, schema in advertised.items()
        }
        assert lost == {name: [] for name in advertised}, format
