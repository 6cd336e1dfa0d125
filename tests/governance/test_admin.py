"""The Tool calls and Approvals pages: lists, filters, the call's page, Approve/Deny/Run and refusals."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from nr_llm import tools
from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool, ToolCall, ToolCallStatus
from tests.admin_clients import messages_of
from tests.factories import McpServerFactory
from tests.fakes import FakeClient
from tests.peers import sdk_server

from .helpers import FakeClock, guarded_tool, row_of

pytestmark = pytest.mark.django_db(transaction=True)


def _client(*codenames: str, username: str = "operator") -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def _approver_client(username: str = "approver") -> Client:
    return _client("view_toolcall", "approve_toolcall", username=username)


def _held(text: str = "hello", actor: object = "agent") -> ToolCall:
    tool = McpTool.objects.filter(tool_name="mcp_guarded_echo").first() or guarded_tool()
    return row_of(tools.execute(tool.tool_name, {"text": text}, client=FakeClient(), actor=actor))


def _change(call: ToolCall, model: str = "toolcall") -> str:
    return reverse(f"admin:nr_llm_{model}_change", args=[call.pk])


def _post(client: Client, call_id: object, verb: str, **data: str):
    return client.post(reverse(f"admin:nr_llm_toolcall_{verb}", args=[call_id]), data, follow=True)


def test_the_changelist_lists_newest_first_with_indexed_filters_and_an_actor_search():
    """Newest first; status, server, tool, time and actor filter (the search finds an actor
    exactly, or a call by its id); no date hierarchy (it reads every row's date)."""
    tool = guarded_tool(requires_approval=False, identifier="free")
    old = row_of(tools.execute(tool.tool_name, {"text": "a"}, client=FakeClient(), actor="first"))
    new = _held(actor="second")
    ToolCall.objects.filter(pk=old.pk).update(created=timezone.now() - timedelta(days=2))
    client = _client("view_toolcall")
    page = client.get(reverse("admin:nr_llm_toolcall_changelist"))
    text = page.content.decode()
    assert text.index(str(new.pk)) < text.index(str(old.pk))
    assert "created__year" not in text and 'class="xfull"' not in text
    for query, shown, hidden in [
        ("status__exact=succeeded", old, new),
        ("status__exact=awaiting_approval", new, old),
        ("actor_label=second", new, old),
        ("server_identifier=guarded", new, old),
        ("server_identifier=free", old, new),
        ("tool_name=mcp_guarded_echo", new, old),
        ("server_identifier=guarded&tool_name=mcp_guarded_echo", new, old),
        ("since=24h", new, old),
        ("q=second", new, old),
        (f"q={old.pk}", old, new),
    ]:
        listed = client.get(reverse("admin:nr_llm_toolcall_changelist") + "?" + query).content.decode()
        assert str(shown.pk) in listed and str(hidden.pk) not in listed, query


def test_the_approvals_inbox_lists_waiting_calls_newest_first_and_the_index_counts_them():
    """By default the inbox lists calls awaiting a decision and approved ones not yet run,
    newest first, and no finished call; "All" lists every call; the admin index names the
    number waiting beside Approvals."""
    older = _held("older")
    approved = _held("approved")
    client = _approver_client()
    assert client.post(reverse("admin:nr_llm_toolcall_approve", args=[approved.pk]), {}).status_code == 302
    newest = _held("newest")
    tool = guarded_tool(requires_approval=False, identifier="free")
    finished = row_of(tools.execute(tool.tool_name, {"text": "b"}, client=FakeClient()))
    start = timezone.now() - timedelta(minutes=10)
    for minutes, row in enumerate([older, approved, newest, finished]):
        ToolCall.objects.filter(pk=row.pk).update(created=start + timedelta(minutes=minutes))
    inbox = reverse("admin:nr_llm_toolcallapproval_changelist")
    # The list only: the approval's message above it names a call too.
    text = client.get(inbox).content.decode().partition('id="result_list"')[2]
    assert text.index(str(newest.pk)) < text.index(str(approved.pk)) < text.index(str(older.pk))
    assert str(finished.pk) not in text
    everything = client.get(inbox + "?status__exact=all").content.decode()
    assert str(finished.pk) in everything and str(older.pk) in everything
    index = client.get(reverse("admin:index")).content.decode()
    assert "Approvals (3 waiting)" in index


def test_the_calls_page_shows_an_approver_the_arguments_digest_and_the_tool_as_it_was():
    """Formatted JSON arguments, the digest, the description and schema at call time, and the buttons."""
    call = _held(text="<b>hi</b>")
    McpTool.objects.filter(pk=call.tool.pk).update(description="A new description.")
    page = _approver_client().get(_change(call, "toolcallapproval")).content.decode()
    assert html.escape('"text": "<b>hi</b>"', quote=True) in page and "<b>hi</b>" not in page
    assert call.arguments_digest in page
    assert "Echo the text." in page and "&quot;required&quot;" in page
    assert "changed since the call: a resume refuses to run it" in page
    assert 'name="_approve"' in page and 'name="_deny"' in page
    assert f'value="{call.arguments_digest}"' in page


def test_staff_without_the_arguments_permission_see_neither_arguments_nor_buttons():
    """A viewer sees that the call exists and its digest, not what it was called with."""
    call = _held(text="confidential-words")
    page = _client("view_toolcall").get(_change(call)).content.decode()
    assert "confidential-words" not in page and "echo ran" not in page
    assert "hidden: needs the permission" in page and call.arguments_digest in page
    assert 'name="_approve"' not in page


def test_approve_then_run_from_the_calls_page(settings, tmp_path):
    """Approve records the decision; Run resumes it against the real server and shows the answer."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    client = _approver_client()
    with sdk_server("--stateless") as url:
        server = McpServerFactory.create(
            identifier="guarded", name="Guarded", url=url, requires_approval=True
        )
        assert import_catalogue(server).ok
        McpTool.objects.update(enabled=True)
        call = row_of(tools.execute("mcp_guarded_echo", {"text": "from the admin"}, actor="agent"))
        approved = _post(client, call.pk, "approve", note="fine", digest=call.arguments_digest)
        assert messages_of(approved)[0][0] == "success"
        assert "approved. It runs when it is resumed" in messages_of(approved)[0][1]
        page = approved.content.decode()
        assert 'name="_resume"' in page and 'name="_approve"' not in page
        ran = _post(client, call.pk, "resume")
    assert messages_of(ran) == [("success", f"Tool call {call.pk} (succeeded): from the admin")]
    call.refresh_from_db()
    assert (call.status, call.approver_label, call.decision_note) == ("succeeded", "approver", "fine")


def test_deny_from_the_calls_page():
    """Deny records the decision and the note."""
    call = _held()
    denied = _post(_approver_client(), call.pk, "deny", note="not now")
    assert messages_of(denied) == [("success", f"Tool call {call.pk} denied; it will not run.")]
    call.refresh_from_db()
    assert (call.status, call.decision_note) == (ToolCallStatus.DENIED, "not now")


def test_approving_twice_is_a_clear_error_and_changes_nothing():
    """The second Approve says who approved it when; the row keeps the first decision."""
    call = _held()
    client = _approver_client()
    _post(client, call.pk, "approve", digest=call.arguments_digest)
    again = _post(client, call.pk, "approve", digest=call.arguments_digest)
    level, text = messages_of(again)[0]
    assert level == "error" and "is already approved by approver at " in text


def test_an_approver_without_the_permission_gets_a_clear_message_and_nothing_runs():
    """A crafted POST by a viewer is refused with the permission named; Run likewise."""
    call = _held()
    viewer = _client("view_toolcall")
    refused = _post(viewer, call.pk, "approve", digest=call.arguments_digest)
    assert messages_of(refused)[0][0] == "error"
    assert "may not approve tool calls" in messages_of(refused)[0][1]
    ran = _post(viewer, call.pk, "resume")
    assert "You may not run tool calls" in messages_of(ran)[0][1]
    call.refresh_from_db()
    assert call.status == ToolCallStatus.AWAITING_APPROVAL


@pytest.mark.parametrize(
    ("call_id", "message"),
    [
        ("not-a-uuid", "'not-a-uuid' is not a tool call id (a UUID)."),
        (
            "5d2f7c8e-0000-4000-8000-000000000000",
            "There is no tool call 5d2f7c8e-0000-4000-8000-000000000000.",
        ),
    ],
)
def test_unknown_or_malformed_ids_are_clear_messages(call_id, message):
    """Approve and Run on an id that is no call say so; nothing is recorded."""
    client = _approver_client()
    for verb in ("approve", "deny"):
        response = _post(client, call_id, verb)
        assert messages_of(response) == [("error", message)], verb
    ran = _post(client, call_id, "resume")
    assert (
        messages_of(ran)[0][0] == "error"
        and "Nothing was run" in messages_of(ran)[0][1]
        or "nothing was run" in messages_of(ran)[0][1]
    )
    assert ToolCall.objects.count() == 0


def test_resuming_a_denied_call_from_the_admin_runs_nothing():
    """Run on a denied call reports the denial as an error."""
    call = _held()
    client = _approver_client()
    _post(client, call.pk, "deny", note="no")
    ran = _post(client, call.pk, "resume")
    level, text = messages_of(ran)[0]
    assert level == "error" and "(denied)" in text and "was denied by approver: no" in text


def test_the_decision_views_are_post_only_and_csrf_protected():
    """GET is 405; a cross-site POST without the token is 403."""
    call = _held()
    client = _approver_client()
    assert client.get(reverse("admin:nr_llm_toolcall_approve", args=[call.pk])).status_code == 405
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(User.objects.get(username="approver"))
    assert csrf_client.post(reverse("admin:nr_llm_toolcall_approve", args=[call.pk])).status_code == 403
    call.refresh_from_db()
    assert call.status == ToolCallStatus.AWAITING_APPROVAL


def test_the_server_changelist_counts_the_calls_awaiting_approval():
    """'2 awaiting approval' under the server's policy, linking to them in the Approvals view."""
    _held("one")
    _held("two")
    page = _client("view_mcpserver", "view_toolcall").get(reverse("admin:nr_llm_mcpserver_changelist"))
    text = page.content.decode()
    assert "2 awaiting approval" in text
    assert (
        reverse("admin:nr_llm_toolcallapproval_changelist")
        + "?status__exact=awaiting_approval&amp;server_identifier=guarded"
    ) in text


def test_an_expired_call_is_listed_as_expired():
    """Opening the list expires what is overdue, so nothing past its time reads as waiting."""
    clock = FakeClock()
    tool = guarded_tool()
    call = row_of(tools.execute(tool.tool_name, {"text": "x"}, client=FakeClient(), clock=clock))
    _approver_client().get(reverse("admin:nr_llm_toolcallapproval_changelist"))
    call.refresh_from_db()
    assert call.status == ToolCallStatus.EXPIRED  # its fake clock is hours behind the real one


def test_nothing_is_added_edited_or_deleted_in_the_admin():
    """The ledger is the ledger's: no add, no change form, no delete, even for a superuser."""
    call = _held()
    root = Client()
    root.force_login(User.objects.create_superuser("root", password="pw"))
    assert root.get(reverse("admin:nr_llm_toolcall_add")).status_code == 403
    page = root.get(_change(call)).content.decode()
    assert 'name="_save"' not in page
    assert root.post(reverse("admin:nr_llm_toolcall_delete", args=[call.pk])).status_code == 403
    assert McpServer.objects.count() == 1


def test_trying_a_tool_of_an_approval_server_holds_the_call_and_links_to_it():
    """The Try page goes through execute(): the call waits, under the operator's name, and the page
    links to it; nothing is sent (the server's address would refuse a connection)."""
    tool = guarded_tool()
    client = _client("change_mcptool", "view_mcptool", username="trier")
    page = client.post(reverse("admin:nr_llm_mcptool_try", args=[tool.pk]), {"arguments": '{"text": "t"}'})
    call = ToolCall.objects.get(tool_name=tool.tool_name)
    assert (call.status, call.actor_label, call.actor_user_id is not None) == (
        "awaiting_approval",
        "trier",
        True,
    )
    text = page.content.decode()
    assert "The call awaits approval" in text
    assert reverse("admin:nr_llm_toolcallapproval_change", args=[call.pk]) in text


def test_the_page_of_a_call_whose_server_was_deleted_still_shows_it():
    """The copied names stand in for the rows that are gone."""
    call = _held()
    McpServer.objects.all().delete()
    page = _approver_client().get(_change(call, "toolcallapproval")).content.decode()
    assert "mcp_guarded_echo" in page and "no longer in the catalogue" in page


def test_a_call_that_may_have_run_reads_may_have_run_not_failed():
    """A failed row whose kind says it may have run (a timeout after the call was written, a
    reaped row) shows "May have run" on the list and its page, its kind beneath; a plain failure
    still shows "Failed"."""
    tool = guarded_tool(requires_approval=False, identifier="free")
    unknown = row_of(tools.execute(tool.tool_name, {"text": "a"}, client=FakeClient(), actor="agent"))
    failed = row_of(tools.execute(tool.tool_name, {"text": "b"}, client=FakeClient(), actor="agent"))
    ToolCall.objects.filter(pk=unknown.pk).update(
        status=ToolCallStatus.FAILED, error_kind="may_have_run:timeout"
    )
    ToolCall.objects.filter(pk=failed.pk).update(status=ToolCallStatus.FAILED, error_kind="status")
    client = _client("view_toolcall")
    listed = client.get(reverse("admin:nr_llm_toolcall_changelist")).content.decode()
    assert listed.count("May have run") == 1 and "may_have_run:timeout" in listed
    assert ">Failed<" in listed
    page = client.get(_change(unknown)).content.decode()
    assert "May have run" in page


def test_a_call_of_an_unknown_name_is_not_listed_as_a_local_tool():
    """The Tool column says which a call without a server was: a newcomer read "local tool" for a
    model's misspelt name."""
    from nr_llm.governance import columns

    unknown = ToolCall(tool_name="no_such_tool", error_kind="unknown_tool")
    local = ToolCall(tool_name="site_clock")
    assert "unknown tool" in columns.tool(unknown) and "local tool" not in columns.tool(unknown)
    assert "local tool" in columns.tool(local)
