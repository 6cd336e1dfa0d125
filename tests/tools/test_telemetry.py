"""The execute_tool span of execute() and resume(), against the official SDK server: its
attributes, its MCP children, the approval flow, opt-in content within the ceilings, and bad
input (a secret, a 10 MB value) that leaks nothing and stays bounded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from opentelemetry import trace
from opentelemetry.trace import NoOpTracer, NoOpTracerProvider, SpanKind, StatusCode

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import DataClass, McpServer, McpTool
from nr_llm.tools import telemetry
from tests.factories import McpServerFactory
from tests.governance.helpers import approver
from tests.otel import Otel, attributes_of, otel
from tests.peers import sdk_server

__all__ = ["otel"]

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

SECRET = "s3cr3t-credential-of-this-site"
CONTENT = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with sdk_server("--stateless") as url:
        yield url


@pytest.fixture
def server(url: str, settings: Any, otel: Otel) -> McpServer:
    """The demo server imported, every tool enabled; a bearer credential it ignores. The
    import's spans are not the test's."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    server = McpServerFactory.create(identifier="demo", name="Demo", url=url, auth_placement="bearer")
    server.set_credential(SECRET)
    server.save()
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    otel.exporter.clear()
    return server


def _tool_span(otel: Otel) -> Any:
    (span,) = [span for span in otel.spans() if span.name.startswith("execute_tool")]
    return span


def test_execute_is_an_internal_span_with_the_conventions_and_the_packages_attributes(
    otel: Otel, server: McpServer
) -> None:
    """execute_tool {tool}, INTERNAL: the operation, the tool, the model's call id, the server,
    its data class, the caller's ceiling, the ledger row, the status, approval not required;
    the MCP requests are its children."""
    result = tools.execute("mcp_demo_echo", {"text": "hi"}, tool_call_id="call_abc123")
    assert result.text == "hi"
    span = _tool_span(otel)
    assert span.name == "execute_tool mcp_demo_echo" and span.kind is SpanKind.INTERNAL
    assert attributes_of(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "mcp_demo_echo",
        "gen_ai.tool.call.id": "call_abc123",
        "nr_llm.server": "demo",
        "nr_llm.data_class": "publicContent",
        "nr_llm.data_class_ceiling": "secretAdjacent",
        "nr_llm.tool_call.id": str(result.call_id),
        "nr_llm.tool_call.status": "succeeded",
        "nr_llm.approval.status": "not_required",
    }
    assert span.status.status_code is StatusCode.UNSET
    (child,) = [other for other in otel.spans() if other is not span]
    assert child.name == "tools/call echo"  # the import learnt the era: no probe
    assert child.parent is not None and child.parent.span_id == span.context.span_id


def test_an_is_error_answer_and_a_refusal_carry_their_error_kind(otel: Otel, server: McpServer) -> None:
    """error.type is the ledger's error kind: tool_error for isError, the refusal's kind when
    nothing ran (no MCP request then)."""
    tools.execute("mcp_demo_fail", {"reason": "no stock"})
    failed = _tool_span(otel)
    assert attributes_of(failed)["error.type"] == "tool_error"
    assert failed.status.status_code is StatusCode.ERROR
    otel.exporter.clear()
    tools.execute("mcp_demo_echo", {"text": "hi"}, data_class_ceiling="publicContent")
    McpServer.objects.filter(pk=server.pk).update(data_class=DataClass.SOURCE_CODE)
    otel.exporter.clear()
    tools.execute("mcp_demo_echo", {"text": "hi"}, data_class_ceiling="publicContent")
    (refused,) = otel.spans()
    assert attributes_of(refused)["error.type"] == "above_ceiling"
    assert attributes_of(refused)["nr_llm.data_class"] == "sourceCode"
    assert attributes_of(refused)["nr_llm.approval.status"] == "not_required"


def test_a_held_call_and_its_resume_are_two_spans_with_their_approval_status(
    otel: Otel, server: McpServer
) -> None:
    """execute of a tool needing approval: awaiting_approval, nothing sent; resume after the
    approval: approved, named for the tool, the tools/call its child."""
    McpServer.objects.filter(pk=server.pk).update(requires_approval=True)
    held = tools.execute("mcp_demo_echo", {"text": "later"}, tool_call_id="call_1")
    (waiting,) = otel.spans()
    assert attributes_of(waiting)["nr_llm.approval.status"] == "awaiting_approval"
    assert attributes_of(waiting)["nr_llm.tool_call.id"] == str(held.call_id)
    tools.approve(held.call_id, approver(), "ok")
    otel.exporter.clear()
    result = tools.resume(held.call_id, tool_call_id="call_1")
    assert result.text == "later"
    span = _tool_span(otel)
    attributes = attributes_of(span)
    assert span.name == "execute_tool mcp_demo_echo"
    assert attributes["nr_llm.tool_call.resumed"] is True
    assert attributes["nr_llm.approval.status"] == "approved"
    assert attributes["gen_ai.tool.call.id"] == "call_1"
    assert attributes["nr_llm.tool_call.id"] == str(held.call_id)
    (call,) = otel.named("tools/call echo")
    assert call.parent is not None and call.parent.span_id == span.context.span_id


def test_arguments_and_results_are_no_attributes_by_default(otel: Otel, server: McpServer) -> None:
    """Without the setting, no span holds what a tool was given or answered."""
    tools.execute("mcp_demo_echo", {"text": "private words"})
    for span in otel.spans():
        assert not set(CONTENT) & set(attributes_of(span))
        assert "private words" not in str(attributes_of(span))


def test_opted_in_content_is_masked_and_clipped_to_the_preview_cap(
    otel: Otel, server: McpServer, settings: Any
) -> None:
    """NR_LLM_OTEL_CAPTURE_CONTENT at the server's data class: arguments and result recorded,
    the server's credential masked, each clipped to NR_LLM_TOOL_CALL_PREVIEW_CHARS."""
    settings.NR_LLM_OTEL_CAPTURE_CONTENT = DataClass.PUBLIC_CONTENT
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 60
    tools.execute("mcp_demo_echo", {"text": f"key {SECRET} " + "y" * 100})
    attributes = attributes_of(_tool_span(otel))
    arguments, result = attributes[CONTENT[0]], attributes[CONTENT[1]]
    assert arguments.startswith('{"text": "key [credential] yyy') and len(arguments) == 60
    assert result.startswith("key [credential] yyy") and len(result) == 60
    assert all(SECRET not in str(attributes_of(span)) for span in otel.spans())


def test_opted_in_content_stays_out_above_the_settings_data_class(
    otel: Otel, server: McpServer, settings: Any
) -> None:
    """A server declared above the capture setting's data class: no content, even opted in."""
    settings.NR_LLM_OTEL_CAPTURE_CONTENT = DataClass.PUBLIC_CONTENT
    McpServer.objects.filter(pk=server.pk).update(data_class=DataClass.EDITOR_CONTENT)
    tools.execute("mcp_demo_echo", {"text": "editor words"})
    assert not set(CONTENT) & set(attributes_of(_tool_span(otel)))


def test_opted_in_content_stays_out_above_the_callers_ceiling(
    otel: Otel, server: McpServer, settings: Any
) -> None:
    """Capture allowed up to secretAdjacent, a caller whose ceiling is publicContent, a server
    above it: the call is refused, and its arguments are not recorded either."""
    settings.NR_LLM_OTEL_CAPTURE_CONTENT = DataClass.SECRET_ADJACENT
    McpServer.objects.filter(pk=server.pk).update(data_class=DataClass.SOURCE_CODE)
    tools.execute("mcp_demo_echo", {"text": "source words"}, data_class_ceiling="publicContent")
    attributes = attributes_of(_tool_span(otel))
    assert attributes["error.type"] == "above_ceiling"
    assert not set(CONTENT) & set(attributes)
    otel.exporter.clear()
    tools.execute("mcp_demo_echo", {"text": "source words"}, data_class_ceiling="sourceCode")
    assert "source words" in attributes_of(_tool_span(otel))[CONTENT[0]]


def test_ten_megabyte_values_leave_every_attribute_bounded(otel: Otel, server: McpServer) -> None:
    """A 10 MB tool name and call id: the call is refused as usual, the span stays small."""
    huge = "z" * (10 * 1024 * 1024)
    result = tools.execute(huge, {}, tool_call_id=huge)
    assert result.is_error
    span = _tool_span(otel)
    assert len(span.name) <= len("execute_tool ") + 256
    assert all(len(str(value)) <= 256 for value in attributes_of(span).values())
    assert attributes_of(span)["error.type"] == "unknown_tool"


def test_an_async_twin_that_runs_execute_in_a_thread_is_one_span(otel: Otel, server: McpServer) -> None:
    """The decorator on an async entry point that awaits execute() through sync_to_async: one
    execute_tool span (the sync call joins it), the MCP requests its children."""

    @telemetry.traced("aexecute")
    async def aexecute(name: str, arguments: dict[str, Any], *, tool_call_id: str | None = None) -> Any:
        return await sync_to_async(tools.execute)(name, arguments)

    result = async_to_sync(aexecute)("mcp_demo_echo", {"text": "async"}, tool_call_id="call_async")
    assert result.text == "async"
    span = _tool_span(otel)
    assert attributes_of(span)["gen_ai.tool.call.id"] == "call_async"
    assert attributes_of(span)["nr_llm.tool_call.id"] == str(result.call_id)
    (call,) = otel.named("tools/call echo")
    assert call.parent is not None and call.parent.span_id == span.context.span_id


def test_turn_and_twin_spans_carry_the_providers_call_id(otel: Otel, server: McpServer) -> None:
    """Each call of execute_many and aexecute_many, and aexecute, is one span with its call's id
    from the provider (gen_ai.tool.call.id) beside the ledger row's (nr_llm.tool_call.id)."""
    calls = [
        {
            "id": "call_t1",
            "type": "function",
            "function": {"name": "mcp_demo_echo", "arguments": '{"text":"a"}'},
        },
        {"type": "tool_use", "id": "toolu_t2", "name": "mcp_demo_echo", "input": {"text": "b"}},
    ]
    results = tools.execute_many(calls)
    results += async_to_sync(tools.aexecute_many)(calls[:1])
    results.append(async_to_sync(tools.aexecute)("mcp_demo_echo", {"text": "c"}, tool_call_id="call_t3"))
    spans = [span for span in otel.spans() if span.name.startswith("execute_tool")]
    seen = {
        attributes_of(span)["gen_ai.tool.call.id"]: attributes_of(span)["nr_llm.tool_call.id"]
        for span in spans
    }
    assert sorted(seen) == ["call_t1", "call_t3", "toolu_t2"] and len(spans) == 4
    assert {r.tool_call_id: str(r.call_id) for r in results}.items() >= {"toolu_t2": seen["toolu_t2"]}.items()


class _BrokenTracer(NoOpTracer):
    def start_span(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tracer bug")


class _BrokenProvider(NoOpTracerProvider):
    """A site's tracer provider whose tracer cannot start a span."""

    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        return _BrokenTracer()


def test_a_tracer_that_fails_leaves_the_call_untraced_not_failed(
    server: McpServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """execute() still answers (nothing raises out of it); the failure is logged, not hidden."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", _BrokenProvider())
    result = tools.execute("mcp_demo_echo", {"text": "anyway"}, tool_call_id="call_9")
    assert (result.text, result.is_error) == ("anyway", False)
    logged = {message for _, _, message in caplog.record_tuples}
    assert "the execute_tool span could not be started" in logged
    assert "the span of an MCP request could not be started" in logged
