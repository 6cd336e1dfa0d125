"""The "Import catalogue" admin action: through Django's Tasks framework, against a real server."""

from __future__ import annotations

import django
import pytest
from django.urls import reverse

from nr_llm import tools
from nr_llm.models import ImportStatus, ImportTaskState, McpServer, McpTool

from . import catalogue_peers
from .admin_clients import messages_of, post_action, staff_client
from .catalogue_peers import closed_port_url
from .factories import McpServerFactory

small_catalogue_url = catalogue_peers.small_catalogue_url
loopback_allowed = catalogue_peers.loopback_allowed

pytestmark = [pytest.mark.e2e, pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]
CHANGELIST = reverse("admin:nr_llm_mcpserver_changelist")
TASKS_PACKAGE = "django.tasks" if django.VERSION >= (6, 0) else "django_tasks"


def _import(client, *servers: McpServer):
    return post_action(client, CHANGELIST, "import_catalogue_action", servers)


def test_immediate_backend_runs_the_import_and_shows_the_counts(admin_client, small_catalogue_url):
    """By default the import runs in the request: the message has the counts, tools start disabled."""
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    response = _import(admin_client, server)
    assert messages_of(response) == [
        (
            "success",
            "Import of peer ran: 10 imported, 0 skipped, 0 orphaned. "
            "New tools start disabled: enable them one by one under MCP tools.",
        )
    ]
    assert McpTool.objects.filter(server=server).count() == 10
    assert not McpTool.objects.filter(enabled=True).exists()
    server.refresh_from_db()
    assert server.import_status == ImportStatus.OK
    assert server.last_contact is not None
    assert "0 / 10 enabled" in response.content.decode()


def test_a_queue_backend_takes_the_import_off_the_request(admin_client, small_catalogue_url, settings):
    """With a backend that queues, nothing is imported in the request and the message says queued."""
    settings.TASKS = {"default": {"BACKEND": f"{TASKS_PACKAGE}.backends.dummy.DummyBackend"}}
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    [(level, text)] = messages_of(_import(admin_client, server))
    assert level == "info"
    assert text.startswith("Import of peer queued as task ")
    assert text.endswith("; the counts appear here once it has run.")
    assert not McpTool.objects.exists()
    server.refresh_from_db()
    assert (server.import_status, server.last_contact) == (ImportStatus.NEVER_IMPORTED, None)


def test_a_refusal_is_an_error_with_its_reason(admin_client):
    """A server without a declared data class is refused, and the message says why."""
    server = McpServerFactory.create(identifier="vague", data_class="")
    [(level, text)] = messages_of(_import(admin_client, server))
    assert level == "error"
    assert text.startswith("Import of vague refused: no data class is declared")


def test_skipped_tools_are_a_warning_with_their_reasons(admin_client, small_catalogue_url):
    """A partial import names what it skipped and why."""
    tools.register("mcp_peer_echo", "The site's own echo.", {"type": "object"}, lambda: "local")
    try:
        server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
        [(level, text)] = messages_of(_import(admin_client, server))
    finally:
        tools.unregister("mcp_peer_echo")
    assert level == "warning"
    assert text == (
        "Import of peer ran: 9 imported, 1 skipped, 0 orphaned. "
        "New tools start disabled: enable them one by one under MCP tools. "
        "Skipped: 'echo': local name mcp_peer_echo is taken by a locally registered tool."
    )


def test_each_selected_server_gets_its_own_import(admin_client, small_catalogue_url):
    """Two servers, two tasks: one unreachable server does not stop or share the other's import."""
    gone = McpServerFactory.create(identifier="gone", name="A gone", url=closed_port_url())
    peer = McpServerFactory.create(identifier="peer", name="B peer", url=small_catalogue_url)
    messages = {text.split(" ")[2]: level for level, text in messages_of(_import(admin_client, gone, peer))}
    assert messages == {"gone": "error", "peer": "success"}
    assert McpTool.objects.filter(server=peer).count() == 10
    gone.refresh_from_db()
    assert gone.import_status == ImportStatus.ERROR


def _break_tool_inserts(execute, sql, params, many, context):
    if sql.startswith("INSERT") and "nr_llm_mcptool" in sql:
        sql = sql.replace("nr_llm_mcptool", "nr_llm_no_such_table")
    return execute(sql, params, many, context)


def test_a_task_that_crashes_is_reported_as_failed(admin_client, small_catalogue_url):
    """An import that raises ends as a failed task, and the message says so instead of a 500."""
    from django.db import connection

    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    with connection.execute_wrapper(_break_tool_inserts):
        response = _import(admin_client, server)
    [(level, text)] = messages_of(response)
    assert level == "error"
    assert text.startswith("Import of peer failed in the task (django.db.utils.")
    assert text.endswith("); see the server log.")
    assert not McpTool.objects.exists()


def test_view_only_operator_is_not_offered_the_import(small_catalogue_url):
    """Without change permission the action is absent and a forged POST imports nothing."""
    client = staff_client("view_mcpserver")
    server = McpServerFactory.create(url=small_catalogue_url)
    assert "import_catalogue_action" not in client.get(CHANGELIST).content.decode()
    _import(client, server)
    assert not McpTool.objects.exists()


def test_a_task_backend_that_cannot_enqueue_is_a_message_not_a_500(admin_client, settings, caplog):
    """A misconfigured task backend fails the enqueue; the operator gets an error message naming
    the failure, the page renders, and nothing is imported."""
    settings.TASKS = {"default": {"BACKEND": f"{TASKS_PACKAGE}.backends.database.NoSuchBackend"}}
    server = McpServerFactory.create(identifier="peer")
    response = _import(admin_client, server)
    assert response.status_code == 200
    [(level, text)] = messages_of(response)
    assert level == "error"
    assert text.startswith("Import of peer failed in the task (")
    assert "could not enqueue the catalogue import of MCP server peer" in caplog.text
    assert not McpTool.objects.exists()


def test_a_queued_import_of_a_deleted_server_is_a_refusal_not_a_crash():
    """A server deleted while its import waited in a queue yields a refusal report."""
    from nr_llm.tasks import import_server_catalogue

    server = McpServerFactory.create(identifier="peer")
    pk = server.pk
    server.delete()
    report = import_server_catalogue.call(pk)
    assert report["refused"] == "the server was deleted before its import ran"
    assert not McpServer.objects.filter(pk=pk).exists()


def test_the_immediate_backend_leaves_the_server_idle_with_its_outcome(admin_client, small_catalogue_url):
    """Queued, run and done inside the request: the row ends idle, its outcome OK."""
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    _import(admin_client, server)
    server.refresh_from_db()
    assert (server.import_task_state, server.import_status) == (ImportTaskState.IDLE, ImportStatus.OK)


def test_a_queued_import_shows_as_queued_in_the_changelist(admin_client, small_catalogue_url, settings):
    """With a backend that queues, the row says queued until a worker takes the task."""
    settings.TASKS = {"default": {"BACKEND": f"{TASKS_PACKAGE}.backends.dummy.DummyBackend"}}
    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    page = _import(admin_client, server).content.decode()
    server.refresh_from_db()
    assert server.import_task_state == ImportTaskState.QUEUED
    assert "Import queued just now" in page


def test_an_import_that_could_not_be_enqueued_is_not_left_queued(admin_client, settings):
    """A failed enqueue returns the row to idle: nothing waits for that import."""
    settings.TASKS = {"default": {"BACKEND": f"{TASKS_PACKAGE}.backends.database.NoSuchBackend"}}
    server = McpServerFactory.create(identifier="peer")
    _import(admin_client, server)
    server.refresh_from_db()
    assert server.import_task_state == ImportTaskState.IDLE


def test_a_crashed_task_is_an_error_outcome_on_the_row(admin_client, small_catalogue_url):
    """The changelist shows a crashed import as Error with the exception class, the row idle."""
    from django.db import connection

    server = McpServerFactory.create(identifier="peer", url=small_catalogue_url)
    with connection.execute_wrapper(_break_tool_inserts):
        page = _import(admin_client, server).content.decode()
    server.refresh_from_db()
    assert (server.import_task_state, server.import_status) == (ImportTaskState.IDLE, ImportStatus.ERROR)
    assert server.import_error.startswith("the import task failed (django.db.utils.")
    assert "the import task failed (django.db.utils." in page
