"""resume(): an approved call runs once, exactly as approved; every other state is a readable result."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from nr_llm import tools
from nr_llm.governance import ledger
from nr_llm.mcp import McpTransportError
from nr_llm.models import DataClass, McpServer, McpTool, ToolCall, ToolCallStatus
from nr_llm.servers import credentials
from tests.fakes import FakeClient
from tests.governance.helpers import FakeClock, approver, count_ledger_queries, guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)


def _approved(arguments: dict[str, object] | None = None, clock: FakeClock | None = None) -> ToolCall:
    tool = guarded_tool()
    held = tools.execute(tool.tool_name, arguments or {"text": "hi"}, client=FakeClient(), clock=clock)
    tools.approve(held.call_id, approver(), "ok", clock=clock)
    return row_of(held)


def test_an_approved_call_runs_once_with_exactly_the_approved_arguments():
    """resume runs it, records the outcome, and a second resume returns that outcome without running."""
    call = _approved({"text": "hi", "nested": {"b": 2, "a": 1}})
    client = FakeClient()
    first = tools.resume(call.id, client=client)
    assert (first.status, first.is_error, first.text, first.call_id) == (
        "succeeded",
        False,
        "echo ran",
        call.id,
    )
    assert client.calls == [("echo", {"text": "hi", "nested": {"b": 2, "a": 1}})]
    call.refresh_from_db()
    assert (call.status, call.era) == (ToolCallStatus.SUCCEEDED, "modern")
    assert call.started_at is not None and call.finished_at is not None and call.duration_ms is not None
    second = tools.resume(str(call.id), client=client)
    assert second.status == "succeeded" and second.call_id == call.id
    assert "already ran (succeeded); it is not run again. Its recorded answer: echo ran" in second.text
    assert len(client.calls) == 1


def test_a_second_resume_without_a_kept_preview_says_so(settings):
    """With NR_LLM_TOOL_CALL_PREVIEW_CHARS = 0 the outcome is the status alone."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = 0
    call = _approved()
    tools.resume(call.id, client=FakeClient())
    assert tools.resume(call.id, client=FakeClient()).text.endswith("Its answer was not kept.")


def test_a_failed_run_is_recorded_and_its_second_resume_is_a_failure_too():
    """The transport's failure is the recorded outcome; nothing is sent twice. A timeout proves
    nothing: the row and the second resume say the call may have run, never that it ran and failed."""
    call = _approved()
    error = McpTransportError("timeout", "guarded", "MCP server 'guarded' did not answer in time.")
    client = FakeClient(error=error)
    assert tools.resume(call.id, client=client).status == "failed"
    again = tools.resume(call.id, client=client)
    assert (again.status, again.is_error, len(client.calls)) == ("failed", True, 1)
    assert "may have run" in again.text and "already ran" not in again.text
    assert "check its effect before calling the tool again" in again.text
    call.refresh_from_db()
    assert (call.status, call.error_kind) == ("failed", "may_have_run:timeout")


def test_a_refused_run_is_recorded_as_failed_and_its_second_resume_says_it_ran():
    """A refusal the server proves (a 4xx status line) is a plain failure: 'already ran (failed)'."""
    call = _approved()
    error = McpTransportError("status", "guarded", "MCP server 'guarded' answered HTTP 422.", http_status=422)
    client = FakeClient(error=error)
    first = tools.resume(call.id, client=client)
    assert "could not run 'echo'" in first.text
    again = tools.resume(call.id, client=client)
    assert "already ran (failed)" in again.text and "may have run" not in again.text
    call.refresh_from_db()
    assert (call.status, call.error_kind) == ("failed", "status")


def test_resuming_a_call_that_still_waits_runs_nothing():
    """Before a decision resume answers "still awaits", with the awaiting status."""
    tool = guarded_tool()
    held = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
    client = FakeClient()
    result = tools.resume(held.call_id, client=client)
    assert (result.status, result.is_error, client.calls) == ("awaiting_approval", False, [])
    assert "still awaits an operator's approval" in result.text


def test_resuming_a_denied_call_tells_the_model_why_and_runs_nothing():
    """A denied call's result names the approver and the note, and says not to wait for it."""
    tool = guarded_tool()
    held = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
    tools.deny(held.call_id, approver("hank"), "use the staging server")
    client = FakeClient()
    result = tools.resume(held.call_id, client=client)
    assert (result.status, result.is_error, client.calls) == ("denied", True, [])
    assert "was denied by hank: use the staging server. It did not run and will not" in result.text


def test_resuming_an_expired_call_runs_nothing():
    """Past its time an undecided call is expired; resume says so."""
    clock = FakeClock()
    tool = guarded_tool()
    held = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient(), clock=clock)
    clock.advance(ledger.expiry().total_seconds() + 1)
    client = FakeClient()
    result = tools.resume(held.call_id, client=client, clock=clock)
    assert (result.status, result.is_error, client.calls) == ("expired", True, [])
    assert row_of(held).status == ToolCallStatus.EXPIRED


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("no-such-id", "'no-such-id' is not a tool call id (a UUID). Nothing was run."),
        (
            "6f0c0b8e-0000-4000-8000-000000000000",
            "There is no tool call 6f0c0b8e-0000-4000-8000-000000000000",
        ),
    ],
)
def test_an_unknown_or_malformed_id_is_a_clear_failure(value, message):
    """Bad ids come back as failed results that say what was wrong; nothing runs."""
    result = tools.resume(value, client=FakeClient())
    assert (result.status, result.is_error, result.call_id) == ("failed", True, None)
    assert result.text.startswith(message)


def test_arguments_changed_after_approval_are_not_run():
    """The approval is bound to the digest: a row whose ciphertext now holds other arguments is refused."""
    call = _approved({"text": "what was approved"})
    ToolCall.objects.filter(pk=call.id).update(
        arguments_ciphertext=credentials.encrypt(ledger.canonical_json({"text": "rm -rf /"}))
    )
    client = FakeClient()
    result = tools.resume(call.id, client=client)
    assert (result.status, client.calls) == ("failed", [])
    assert "other arguments than the ones approved" in result.text
    call.refresh_from_db()
    assert (call.status, call.error_kind) == ("failed", "digest_mismatch")


@pytest.mark.parametrize(
    ("change", "kind", "words"),
    [
        (
            {"description": "Now also deletes things."},
            "changed_since_approval",
            "description or input schema changed",
        ),
        (
            {"input_schema": {"type": "object"}},
            "changed_since_approval",
            "description or input schema changed",
        ),
        ({"enabled": False}, "disabled", "is disabled"),
        ({"orphaned": True}, "orphaned", "no longer offered"),
    ],
)
def test_a_tool_changed_after_approval_is_not_run(change, kind, words):
    """What was approved is the tool as shown: a changed definition, or a tool switched off, stops it."""
    call = _approved()
    McpTool.objects.filter(pk=call.tool.pk).update(**change)
    client = FakeClient()
    result = tools.resume(call.id, client=client)
    assert (result.status, client.calls) == ("failed", [])
    assert words in result.text
    call.refresh_from_db()
    assert (call.status, call.error_kind) == ("failed", kind)


def test_a_server_raised_above_the_calls_ceiling_after_approval_is_not_run():
    """The ceiling the call was made under still holds when it is resumed."""
    tool = guarded_tool(data_class=DataClass.PUBLIC_CONTENT)
    held = tools.execute(
        tool.tool_name, {"text": "x"}, client=FakeClient(), data_class_ceiling="publicContent"
    )
    tools.approve(held.call_id, approver())
    McpServer.objects.filter(pk=tool.server_id).update(data_class=DataClass.SECRET_ADJACENT)
    client = FakeClient()
    result = tools.resume(held.call_id, client=client)
    assert (result.status, client.calls) == ("failed", [])
    assert "above this caller's data-class ceiling (Public content)" in result.text


def test_a_resume_costs_the_ledger_three_queries_and_the_caller_one(monkeypatch):
    """The claim (the conditional move to running, then the row read) and the outcome, each in
    its own transaction, and the tool's current definition: all on the caller's connection."""
    call = _approved()
    counted = count_ledger_queries(monkeypatch)
    with CaptureQueriesContext(connection) as caller:
        tools.resume(call.id, client=FakeClient())
    assert [sql.split()[0] for sql in counted] == ["UPDATE", "SELECT", "UPDATE"], counted
    statements = [query["sql"].split()[0] for query in caller.captured_queries]
    assert [word for word in statements if word not in ("BEGIN", "COMMIT")] == [
        "UPDATE",
        "SELECT",
        "SELECT",
        "UPDATE",
    ], caller.captured_queries
