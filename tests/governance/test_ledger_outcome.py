"""A call's outcome is written by a statement built once: it must write what the ORM's
``filter(id=..., status="running").update(...)`` writes, and only to a running row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from nr_llm.governance import ledger, preview
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.models import McpTool
from tests.governance.helpers import guarded_tool

pytestmark = pytest.mark.django_db(transaction=True)

WHEN = datetime(2026, 7, 28, 12, 30, 45, 123456, tzinfo=UTC)


def _running(tool: McpTool | None = None) -> ToolCall:
    tool = tool or guarded_tool(requires_approval=False)
    call = ledger.NewCall(tool.tool_name, '{"text":"x"}', ledger.actor_fields("bot"), tool=tool)
    return ToolCall.objects.get(pk=ledger.open_call(call, ToolCallStatus.RUNNING, WHEN))


def _columns(row: ToolCall) -> dict[str, object]:
    row.refresh_from_db()
    values = {field.attname: getattr(row, field.attname) for field in ToolCall._meta.concrete_fields}
    # Each row has its own key, arguments' and answer's ciphertext (Fernet's nonce) and start.
    for own in ("id", "arguments_ciphertext", "result_preview_ciphertext", "started_at"):
        values.pop(own)
    return values


@pytest.mark.parametrize("is_error", [False, True])
def test_the_outcome_is_what_the_orms_update_writes(is_error: bool) -> None:
    """Every column of a row ended by ``finish`` equals one ended by the ORM's update with the
    same changes (the time with its microseconds, the status, the kind, the era...)."""
    built = _running()
    orm = _running(built.tool)
    ledger.finish(
        built.pk,
        is_error=is_error,
        error_kind="tool_error" if is_error else "",
        duration_ms=41,
        era="2026-07-28",
        result_text="echo ran",
        now=WHEN,
        structured={"t": 33},
    )
    ToolCall.objects.filter(pk=orm.pk, status=ToolCallStatus.RUNNING).update(
        status=ToolCallStatus.FAILED if is_error else ToolCallStatus.SUCCEEDED,
        error_kind="tool_error" if is_error else "",
        duration_ms=41,
        era="2026-07-28",
        finished_at=WHEN,
        result_preview_ciphertext=preview.preview("echo ran", {"t": 33}),
    )
    assert _columns(built) == _columns(orm)
    assert built.finished_at == WHEN and built.status == ("failed" if is_error else "succeeded")
    assert preview.preview_of(built) == preview.preview_of(orm)


def test_only_a_running_row_is_ended_through_the_sites_cursor() -> None:
    """The outcome goes through Django's cursor (an execute wrapper sees it), and a second
    outcome for the same call changes nothing: a row is ended once."""
    row = _running()
    seen: list[str] = []

    def spy(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        ledger.finish(row.pk, is_error=False, error_kind="", duration_ms=5, era="", result_text="a", now=WHEN)
    assert [sql.split()[0] for sql in seen if "nr_llm_toolcall" in sql] == ["UPDATE"], seen
    later = datetime(2026, 7, 29, tzinfo=UTC)
    ledger.finish(row.pk, is_error=True, error_kind="late", duration_ms=9, era="", result_text="b", now=later)
    row.refresh_from_db()
    assert (row.status, row.error_kind, row.duration_ms, row.finished_at) == ("succeeded", "", 5, WHEN)
    assert preview.preview_of(row) == "a"
