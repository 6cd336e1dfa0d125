"""The call's page shows its MCP task; Cancel task asks the server (POST, approver only, CSRF)."""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from nr_llm import tools
from nr_llm.governance import call_tasks
from nr_llm.governance.models import ToolCall, ToolCallStatus
from nr_llm.models import DataClass
from nr_llm.tools.worker import run_tool_call
from tests.admin_clients import messages_of
from tests.factories import McpServerFactory, McpToolFactory
from tests.peers import running

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.task_server"]) as port:
        yield f"http://127.0.0.1:{port}"


def _client(*codenames: str, username: str) -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_the_page_shows_the_task_and_an_approver_cancels_it(base, settings):
    """The task's id and state are shown (its session id never); a viewer gets no button and is
    refused; GET is 405 and a cross-site POST 403; an approver's POST sends one tasks/cancel, the
    answer is kept on the row, and the worker following the task ends the call cancelled."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    settings.NR_LLM_QUEUED_TASK_SLICE = 2
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    backend = run_tool_call.get_backend()
    backend.clear()  # type: ignore[attr-defined]
    server = McpServerFactory.create(
        identifier="tasks", url=f"{base}/handshake/never/admin/mcp", data_class=DataClass.EDITOR_CONTENT
    )
    tool = McpToolFactory.create(
        server=server,
        remote_name="work",
        enabled=True,
        input_schema={"type": "object"},
        task_support="required",
    )
    pk = tools.enqueue(tool.tool_name, {}).call_id
    assert pk is not None
    run_tool_call.call(str(pk))
    row = ToolCall.objects.get(pk=pk)
    state = call_tasks.state_of(row)
    assert state is not None and state.session_id
    page_url = reverse("admin:nr_llm_toolcall_change", args=[pk])
    cancel_url = reverse("admin:nr_llm_toolcall_cancel_task", args=[pk])

    viewer = _client("view_toolcall", username="viewer")
    page = viewer.get(page_url).content.decode()
    assert f"{state.task_id} · working" in page and "Cancel task" not in page
    assert state.session_id not in page
    refused = viewer.post(cancel_url, follow=True)
    assert "may not cancel tasks" in messages_of(refused)[0][1]

    approver = _client("view_toolcall", "approve_toolcall", username="approver")
    page = approver.get(page_url).content.decode()
    assert "Cancel task" in page and state.session_id not in page
    assert approver.get(cancel_url).status_code == 405
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(User.objects.get(username="approver"))
    assert csrf.post(cancel_url).status_code == 403

    done = approver.post(cancel_url, follow=True)
    level, text = messages_of(done)[0]
    assert level == "success" and "the task is now cancelled" in text
    row.refresh_from_db()
    assert row.task_state is not None and row.task_state["status"] == "cancelled"
    assert row.status == ToolCallStatus.RUNNING  # its worker records the end

    run_tool_call.call(str(pk))  # the next slice reads the end
    row.refresh_from_db()
    assert (row.status, row.error_kind) == (ToolCallStatus.FAILED, "may_have_run:task_cancelled")
    with urllib.request.urlopen(f"{base}/seen", timeout=5) as answer:
        methods = [r["method"] for r in json.load(answer) if r["path"] == "/handshake/never/admin/mcp"]
    assert methods.count("tools/call") == 1 and methods.count("tasks/cancel") == 1
