"""execute(): one ledger row per call, the approval hold, the ledger-failure policy, the boundary.

The ledger writes on a connection of its own, so these tests commit (``transaction=True``).
"""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext

from nr_llm import tools
from nr_llm.governance import ledger, preview
from nr_llm.mcp import McpTransportError
from nr_llm.models import ToolCall, ToolCallStatus
from nr_llm.servers import credentials
from nr_llm.servers.credentials import CredentialUnavailable
from tests.fakes import FakeClient
from tests.governance.helpers import FakeClock, approver, count_ledger_queries, guarded_tool

pytestmark = pytest.mark.django_db(transaction=True)


def _row(result: tools.ToolResult) -> ToolCall:
    assert result.call_id is not None, result
    return ToolCall.objects.get(pk=result.call_id)


def test_a_remote_call_leaves_one_row_with_its_outcome_actor_and_digest():
    """A call without approval runs, and its row holds tool, server, actor, era, duration and outcome."""
    tool = guarded_tool(requires_approval=False)
    user = approver("alice", allowed=False)
    client = FakeClient()
    result = tools.execute(tool.tool_name, {"text": "hi", "n": 1}, client=client, actor=user)
    assert (result.status, result.is_error, result.text) == ("succeeded", False, "echo ran")
    row = _row(result)
    assert (row.tool_name, row.server_identifier, row.remote_name) == ("mcp_guarded_echo", "guarded", "echo")
    assert (row.status, row.error_kind, row.era) == (ToolCallStatus.SUCCEEDED, "", "modern")
    assert (row.actor_user_id, row.actor_label) == (user.pk, "alice")
    assert row.duration_ms is not None and row.finished_at is not None
    assert row.arguments_digest == ledger.digest_of('{"n":1,"text":"hi"}')
    assert (row.tool_description, row.tool_input_schema) == (tool.description, tool.input_schema)
    assert client.calls == [("echo", {"text": "hi", "n": 1})]


def test_the_arguments_and_the_preview_are_encrypted_at_rest():
    """Neither the arguments nor the answer are in the row in clear; the credential keys read them."""
    tool = guarded_tool(requires_approval=False)
    result = tools.execute(
        tool.tool_name, {"text": "a-secret-word"}, client=FakeClient(), actor="nightly job"
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM nr_llm_toolcall")
        stored = json.dumps(cursor.fetchall(), default=str)
    assert "a-secret-word" not in stored and "echo ran" not in stored
    row = _row(result)
    assert ledger.arguments_of(row) == {"text": "a-secret-word"}
    assert preview.preview_of(row) == "echo ran"
    assert row.actor_label == "nightly job" and row.actor_user_id is None
    assert "ciphertext" not in repr(row)


@pytest.mark.parametrize(("limit", "kept"), [(0, ""), (4, "ech…"), (500, "echo ran")])
def test_the_preview_keeps_the_configured_length(settings, limit, kept):
    """NR_LLM_TOOL_CALL_PREVIEW_CHARS clips the kept answer; 0 keeps none."""
    settings.NR_LLM_TOOL_CALL_PREVIEW_CHARS = limit
    tool = guarded_tool(requires_approval=False)
    row = _row(tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient()))
    assert preview.preview_of(row) == kept
    assert (row.result_preview_ciphertext == "") is (kept == "")


def test_a_local_tool_call_is_recorded_too():
    """Local tools are in the ledger as well, with no server."""
    tools.register("site_ping", "Ping.", {"type": "object"}, lambda: "pong")
    try:
        result = tools.execute("site_ping", {}, actor="cron")
    finally:
        tools.unregister("site_ping")
    row = _row(result)
    assert (row.tool_name, row.server_identifier, row.status, row.era) == ("site_ping", "", "succeeded", "")


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("mcp_nope_x", {}, "unknown_tool"),
        (["not", "a", "name"], {}, "unknown_tool"),
        ("mcp_guarded_echo", ["not", "an", "object"], "invalid_arguments"),
        ("mcp_guarded_echo", {"x": float("nan")}, "invalid_arguments"),
    ],
)
def test_a_refused_call_is_one_finished_row_and_nothing_is_sent(name, arguments, kind):
    """Unknown tools and unusable arguments are recorded as failed, with the kind, and not sent."""
    guarded_tool(requires_approval=False)
    client = FakeClient()
    result = tools.execute(name, arguments, client=client)
    assert result.is_error and result.status == "failed"
    row = _row(result)
    assert (row.status, row.error_kind, row.finished_at is not None) == ("failed", kind, True)
    assert client.calls == []


def test_a_tool_of_an_approval_server_is_held_and_never_contacted():
    """execute() records an awaiting call, returns its id with a status of its own, sends nothing."""
    tool = guarded_tool()
    client = FakeClient()
    clock = FakeClock()
    result = tools.execute(tool.tool_name, {"text": "hi"}, client=client, actor="bot", clock=clock)
    assert result.status == "awaiting_approval" and result.awaiting_approval
    assert result.is_error is False and result.server == "guarded"
    assert str(result.call_id) in result.text and "has not run" in result.text
    assert client.calls == [] and client.endpoints == []
    row = _row(result)
    assert row.status == ToolCallStatus.AWAITING_APPROVAL
    assert row.expires_at == clock.now + ledger.expiry()


def test_two_queries_of_the_ledger_per_call_one_for_a_held_call(monkeypatch):
    """The ledger's cost: two statements per run, one per held call, each through the caller's
    own connection's cursor (its query log, execute wrappers and APM see them)."""
    counted = count_ledger_queries(monkeypatch)
    runs = guarded_tool(requires_approval=False, identifier="runs")
    held = guarded_tool(identifier="held")
    with CaptureQueriesContext(connection) as caller:
        tools.execute(runs.tool_name, {"text": "x"}, client=FakeClient())
    assert len(counted) == 2, counted
    assert counted[0].startswith("INSERT") and counted[1].startswith("UPDATE")
    # The caller's own connection: the tool lookup, then the two rows, each committed on its own
    # (FakeClient stamps no health row).
    statements = [query["sql"].split()[0] for query in caller.captured_queries]
    assert [word for word in statements if word not in ("BEGIN", "COMMIT")] == ["SELECT", "INSERT", "UPDATE"]
    assert statements.count("COMMIT") in (0, 2)  # SQLite logs its BEGIN and COMMIT; psycopg does not
    counted.clear()
    tools.execute(held.tool_name, {"text": "x"}, client=FakeClient())
    assert len(counted) == 1 and counted[0].startswith("INSERT"), counted


def test_a_sites_execute_wrapper_sees_every_ledger_statement():
    """Instrumentation installed as Django documents it (``connection.execute_wrapper``, as APM
    agents do) sees the call's catalogue read and both ledger writes, with their tables."""
    tool = guarded_tool(requires_approval=False)
    seen: list[str] = []

    def spy(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        result = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
    assert not result.is_error, result.text
    ledger_statements = [sql.split()[0] for sql in seen if "nr_llm_toolcall" in sql]
    assert ledger_statements == ["INSERT", "UPDATE"], seen
    assert any(sql.startswith("SELECT") and "nr_llm_mcptool" in sql for sql in seen)


def test_the_row_survives_the_callers_rollback_on_postgresql():
    """A caller's rolled-back transaction around execute() leaves the audit row in place."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite cannot write beside the caller's transaction (see the next test)")
    tool = guarded_tool(requires_approval=False)
    with pytest.raises(RuntimeError), transaction.atomic():
        result = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient())
        raise RuntimeError("the caller's work fails after the call")
    assert _row(result).status == ToolCallStatus.SUCCEEDED


def test_inside_a_callers_transaction_on_sqlite_no_call_is_sent_without_its_row(caplog):
    """SQLite has one writer: inside the caller's transaction no row can be written, so neither
    a call that needs approval nor any other is sent; each lost row is logged at ERROR."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL writes the row beside the caller's transaction")
    runs = guarded_tool(requires_approval=False, identifier="runs")
    held = guarded_tool(identifier="held")
    client = FakeClient()
    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"), transaction.atomic():
        ran = tools.execute(runs.tool_name, {"text": "x"}, client=client, actor="bot")
        refused = tools.execute(held.tool_name, {"text": "y"}, client=client)
    assert (ran.status, ran.call_id, ran.is_error) == ("failed", None, True)
    assert "could not be recorded in the ledger" in ran.text and "it was not sent" in ran.text
    assert refused.status == "failed" and refused.is_error and refused.call_id is None
    assert "could not be recorded" in refused.text and "it was not run" in refused.text
    assert client.calls == []
    messages = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert any("mcp_runs_echo of MCP server runs by 'bot' was not recorded" in m for m in messages), messages
    assert any("requires approval and could not be recorded" in m for m in messages), messages
    assert ToolCall.objects.count() == 0


def test_a_database_refusing_the_running_row_sends_nothing(monkeypatch, caplog):
    """A call needing no approval whose running row the database refuses is not sent either."""

    def refuse(work, **options):
        raise OperationalError("the database is shutting down")

    monkeypatch.setattr(ledger, "run_in_own_transaction", refuse)
    tool = guarded_tool(requires_approval=False)
    client = FakeClient()
    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"):
        result = tools.execute(tool.tool_name, {"text": "x"}, client=client)
    assert (result.status, result.call_id, client.calls) == ("failed", None, [])
    assert "could not run" in result.text and "it was not sent" in result.text
    assert any("was not recorded in the ledger" in record.getMessage() for record in caplog.records)


def test_a_database_refusing_the_row_fails_an_approval_call_closed(monkeypatch, caplog):
    """Whatever the database: a refused write holds nothing for approval and sends nothing."""

    def refuse(work, **options):
        raise OperationalError('relation "nr_llm_toolcall" is locked\nLINE 1: INSERT INTO')

    monkeypatch.setattr(ledger, "run_in_own_transaction", refuse)
    tool = guarded_tool()
    client = FakeClient()
    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"):
        result = tools.execute(tool.tool_name, {"text": "x"}, client=client)
    assert (result.status, result.call_id, client.calls) == ("failed", None, [])
    # The model reads the result: it learns the type of the database's error, not its SQL.
    assert "(OperationalError)" in result.text and "INSERT" not in result.text
    assert "nr_llm_toolcall" not in result.text
    # The operator's log keeps the driver's words.
    assert any("INSERT INTO" in record.getMessage() for record in caplog.records)


def test_frames_below_execute_show_neither_the_credential_nor_the_arguments():
    """What an error reporter prints of execute()'s locals (their repr) holds no credential and
    no argument in clear: the trace and the call it carries seal them."""
    from nr_llm.tools.execution import _Trace

    call = ledger.NewCall("mcp_x_echo", '{"text":"a-secret-word"}', {"actor_label": ""})
    trace = _Trace("mcp_x_echo", secret="s3cret-bearer", call=call)
    assert "s3cret-bearer" not in repr(trace)
    assert "a-secret-word" not in repr(trace) and "a-secret-word" not in repr(call)


def test_a_name_that_cannot_become_text_is_an_error_result_not_an_exception():
    """Even the tool's name is read inside the reporting boundary."""

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    result = tools.execute(Unprintable(), {})  # type: ignore[arg-type]
    assert result.is_error and result.status == "failed"


# -- the reporting boundary (issue 18, item 5) ------------------------------------------


class _Exploding(FakeClient):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.raised = error

    def call_tool(self, endpoint, name, arguments=None, *, input_schema=None):
        super().call_tool(endpoint, name, arguments, input_schema=input_schema)
        raise self.raised


@pytest.mark.parametrize(
    "error",
    [
        OperationalError("database is locked"),
        CredentialUnavailable("the stored credential cannot be decrypted with the configured keys"),
        KeyError("grant"),
    ],
    ids=["database", "credential", "anything"],
)
def test_a_store_credential_or_database_error_is_an_error_result_naming_the_server(error, caplog):
    """Whatever escapes the call is a failed result naming the server; the traceback, with the
    server's credential masked, goes to the log; the row records the failure. Raised from within
    the client, nothing proves the call was not sent: it may have run."""
    secret = "s3cret-token-value"
    tool = guarded_tool(requires_approval=False, auth_placement="bearer")
    tool.server.set_credential(secret)
    tool.server.save()
    error.args = (*error.args, f"while using {secret}")
    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"):
        result = tools.execute(tool.tool_name, {"text": "x"}, client=_Exploding(error))
    assert result.is_error and result.status == "failed" and result.server == "guarded"
    assert result.text.startswith("MCP server \"Guarded server\" (guarded) may have run 'mcp_guarded_echo'")
    assert "check its effect before calling it again" in result.text
    assert type(error).__name__ in result.text and secret not in result.text
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Traceback (most recent call last)" in logged and type(error).__name__ in logged
    assert secret not in caplog.text and "[credential]" in logged
    row = _row(result)
    assert (row.status, row.error_kind) == ("failed", "may_have_run:internal")


def test_a_lookup_that_fails_in_the_database_is_an_error_result(monkeypatch, caplog):
    """Even the tool lookup failing comes back as a result, not an exception, and is recorded."""

    def broken(execute, sql, params, many, context):
        # The database fails the catalogue's read, whatever builds it (ORM or a built statement).
        if sql.startswith("SELECT") and "nr_llm_mcptool" in sql:
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with caplog.at_level(logging.ERROR, logger="nr_llm.tools"), connection.execute_wrapper(broken):
        result = tools.execute("mcp_any_tool", {}, actor="bot")
    assert result.is_error and "OperationalError" in result.text
    assert "failed unexpectedly" in caplog.text
    # The ledger (on its own connection) still records the failed call.
    row = _row(result)
    assert (row.tool_name, row.status, row.error_kind, row.actor_label) == (
        "mcp_any_tool",
        "failed",
        "internal",
        "bot",
    )


def test_a_transport_error_is_recorded_with_its_kind():
    """A failed MCP operation is a failed row whose error kind is the transport's."""
    tool = guarded_tool(requires_approval=False)
    error = McpTransportError("unreachable", "guarded", "MCP server 'guarded' could not be reached.")
    result = tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient(error=error))
    row = _row(result)
    assert (result.status, row.status, row.error_kind) == ("failed", "failed", "unreachable")


def test_mcp_rotate_credentials_re_encrypts_the_ledger(settings):
    """The ledger uses the credential keys: rotation moves its rows to the new key, so the old can go."""
    from django.core.management import call_command

    settings.NR_LLM_CREDENTIAL_KEYS = ["old-key-0123456789abcdef"]
    tool = guarded_tool(requires_approval=False)
    row = _row(tools.execute(tool.tool_name, {"text": "kept"}, client=FakeClient()))
    settings.NR_LLM_CREDENTIAL_KEYS = ["new-key-0123456789abcdef", "old-key-0123456789abcdef"]
    out = io.StringIO()
    call_command("mcp_rotate_credentials", stdout=out)
    assert "2 credential(s) re-encrypted" in out.getvalue()  # the arguments and the preview
    settings.NR_LLM_CREDENTIAL_KEYS = ["new-key-0123456789abcdef"]
    row.refresh_from_db()
    assert (ledger.arguments_of(row), preview.preview_of(row)) == ({"text": "kept"}, "echo ran")
    settings.NR_LLM_CREDENTIAL_KEYS = ["other-key-0123456789abcdef"]
    with pytest.raises(CredentialUnavailable):
        credentials.decrypt(row.arguments_ciphertext)


def test_the_row_outlives_its_server_tool_and_actor_and_a_delete_never_touches_it():
    """Deleting the server (and with it the tool) or the user leaves the row as written: nothing
    of another transaction locks a ledger row, even a delete inside the caller's own."""
    tool = guarded_tool(requires_approval=False)
    user = approver("ida", allowed=False)
    row = _row(tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient(), actor=user))
    with CaptureQueriesContext(connection) as deleting, transaction.atomic():
        tool.server.delete()
        user.delete()
    assert not any("nr_llm_toolcall" in query["sql"] for query in deleting.captured_queries)
    kept = ToolCall.objects.get(pk=row.pk)
    assert (kept.tool_name, kept.server_identifier, kept.actor_label, kept.status) == (
        "mcp_guarded_echo",
        "guarded",
        "ida",
        "succeeded",
    )
