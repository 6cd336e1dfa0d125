"""With no tracer provider installed (no OpenTelemetry SDK), a tool call starts no span at all:
the API's proxy would hand out one that records nothing, at a cost on every call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry import trace

from nr_llm import tools
from nr_llm.mcp.wire import telemetry as wire
from nr_llm.tools import telemetry
from tests.fakes import FakeClient
from tests.governance.helpers import guarded_tool, row_of
from tests.otel import Otel, otel

__all__ = ["otel"]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The spans the tool-call path asked a tracer for, by name."""
    names: list[str] = []
    real = wire.tracer

    class Counting:
        def start_span(self, name: str, **kwargs: Any) -> Any:
            names.append(name)
            return real().start_span(name, **kwargs)

    monkeypatch.setattr(telemetry, "tracer", Counting)
    return names


def test_no_span_is_started_while_no_tracer_provider_is_installed(
    monkeypatch: pytest.MonkeyPatch, asked: list[str]
) -> None:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)  # as a process without the SDK has it
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=client)
    again = asyncio.run(tools.aexecute(tool.tool_name, {"text": "hi"}, client=client))
    for each in (result, again):
        assert not each.is_error, each.text
        assert row_of(each).status == "succeeded"
    assert asked == []


def test_a_provider_installed_later_gets_the_next_calls_span(otel: Otel, asked: list[str]) -> None:
    """Decided per call, not once: a site may install its SDK after nr_llm was imported."""
    tool = guarded_tool(requires_approval=False)
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=FakeClient())
    assert not result.is_error, result.text
    assert asked == [f"execute_tool {tool.tool_name}"]
    assert [span.name for span in otel.named(f"execute_tool {tool.tool_name}")] == asked
