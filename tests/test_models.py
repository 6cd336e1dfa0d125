import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from nr_llm.models import ImportStatus, McpServer
from nr_llm.servers.models import STDIO_HINT

from .factories import McpServerFactory, McpToolFactory

pytestmark = pytest.mark.django_db


def _errors(server: McpServer) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as info:
        server.full_clean()
    return info.value.message_dict


@pytest.mark.parametrize("identifier", ["Demo", "has-dash", "", "x" * 33, "spa ce", "ümlaut"])
def test_identifier_outside_the_rule_is_refused_with_an_operator_message(identifier):
    """The identifier names every imported tool, so only [a-z0-9_]{1,32} is accepted."""
    errors = _errors(McpServer(identifier=identifier, name="n"))
    assert "identifier" in errors


def test_valid_server_passes_validation_with_defaults():
    """A new row is disabled, requires approval, has no data class and was never imported."""
    server = McpServer(identifier="demo_1", name="Demo", url="https://mcp.example.com/mcp")
    server.full_clean()
    assert server.enabled is False
    assert server.requires_approval is True
    assert server.data_class == ""
    assert server.import_status == ImportStatus.NEVER_IMPORTED


@pytest.mark.parametrize(
    "url", ["ftp://example.com/mcp", "file:///etc/passwd", "javascript:alert(1)", "not a url"]
)
def test_url_must_be_http_or_https(url):
    """Only http(s) URLs can be configured."""
    errors = _errors(McpServer(identifier="demo", name="n", url=url))
    assert errors["url"][0] == "Enter an http:// or https:// URL."
    # What is no URL at all may be a stdio server's command: the second message says what to do.
    assert errors["url"][1:] == ([] if "://" in url else [STDIO_HINT])


@pytest.mark.parametrize("timeout", [0, -5])
def test_non_positive_operation_timeout_is_refused(timeout):
    """A server's budget override must be at least one second."""
    errors = _errors(McpServer(identifier="demo", name="n", operation_timeout=timeout))
    assert "operation_timeout" in errors


def test_header_placement_needs_a_header_name():
    """A named-header credential without a header name is refused."""
    errors = _errors(McpServer(identifier="demo", name="n", auth_placement="header"))
    assert errors["auth_header_name"] == ["Name the header that carries the credential."]


def test_budget_uses_server_override_else_installation_setting():
    """operation_timeout overrides NR_LLM_MCP_OPERATION_TIMEOUT; unset, the setting applies."""
    with override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=33):
        assert McpServer(identifier="a", name="a").budget_seconds == 33.0
        assert McpServer(identifier="a", name="a", operation_timeout=7).budget_seconds == 7.0


def test_tool_name_is_unique_across_servers():
    """The local tool name is the key a model calls, so it is unique installation-wide."""
    tool = McpToolFactory.create()
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        McpToolFactory.create(tool_name=tool.tool_name, server=McpServerFactory.create())
