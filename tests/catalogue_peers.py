"""Fixtures shared by the tests that import from the SDK server (imported by those modules)."""

import socket

import pytest

from tests.peers import sdk_server


@pytest.fixture(scope="module")
def small_catalogue_url():
    """10 tools (5 demo, 5 generated), 3 per page: paging without the full 500-tool walk."""
    with sdk_server("--stateless", "--extra-tools", "5", "--page-size", "3") as url:
        yield url


def closed_port_url() -> str:
    """An MCP URL on 127.0.0.1 where nothing listens (the port was just free)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


@pytest.fixture
def loopback_allowed(settings):
    """The peers listen on 127.0.0.1, which the SSRF guard refuses unless allowed."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True


@pytest.fixture(scope="module")
def stateless_url():
    """The SDK server (stateless), one per test module."""
    with sdk_server("--stateless") as url:
        yield url


def imported_demo(url: str, *enabled: str) -> None:
    """The SDK server at ``url`` registered as "demo", its catalogue imported, the named remote
    tools enabled (the caller allows loopback)."""
    from nr_llm.catalogue import import_catalogue
    from nr_llm.models import McpTool
    from tests.factories import McpServerFactory

    server = McpServerFactory.create(identifier="demo", name="Demo", url=url)
    assert import_catalogue(server).ok
    McpTool.objects.filter(remote_name__in=enabled).update(enabled=True)
