"""``tools.execute(..., responder=...)`` against the official SDK server's ``reserve`` tool, which
asks for a booking mid-call (handshake era) or with input_required (2026-07-28)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from django.test import override_settings

from nr_llm import tools
from nr_llm.mcp import ElicitationAnswer, ElicitationRequest
from nr_llm.models import McpTool, ToolCall
from tests.factories import McpServerFactory, McpToolFactory
from tests.peers import running

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(params=["handshake", "modern"])
def reserve(request: pytest.FixtureRequest) -> Iterator[McpTool]:
    args = ["--no-discover"] if request.param == "handshake" else ["--modern-only"]
    with (
        running([sys.executable, "-m", "tests.peers.features_server", *args]) as port,
        override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True),
    ):
        server = McpServerFactory.create(
            identifier="features", url=f"http://127.0.0.1:{port}/mcp", requires_approval=False
        )
        yield McpToolFactory.create(
            server=server, remote_name="reserve", enabled=True, input_schema={"type": "object"}
        )


def test_a_responder_answers_the_server_and_the_call_succeeds(reserve: McpTool) -> None:
    """The site's responder fills the date; the schema's defaults fill the rest (SEP-1034)."""
    asked: list[ElicitationRequest] = []

    def respond(request: ElicitationRequest) -> ElicitationAnswer:
        asked.append(request)
        return ElicitationAnswer.accept({"date": "Friday"})

    result = tools.execute(reserve.tool_name, {}, responder=respond)
    assert (result.status, result.text) == ("succeeded", "reserved Friday for 2 (confirm=True)")
    assert [request.message for request in asked] == ["When would you like to come?"]


def test_without_a_responder_the_call_needs_input_and_its_row_says_so(reserve: McpTool) -> None:
    """No responder: nothing declared, the server cannot ask, the result is needs_input with a
    sentence the model can act on, and the ledger row records the kind."""
    result = tools.execute(reserve.tool_name, {})
    assert (result.is_error, result.status) == (True, "needs_input")
    assert "asked for input" in result.text and "did not finish" in result.text
    assert result.call_id is not None
    assert ToolCall.objects.get(pk=result.call_id).error_kind == "needs_input"
