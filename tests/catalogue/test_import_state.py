"""An admin import's state on the server row: queued, running, idle; by token; stalled by the clock."""

from datetime import UTC, datetime, timedelta

import pytest

from nr_llm.catalogue import import_state
from nr_llm.models import ImportStatus, ImportTaskState, McpServer

from ..factories import McpServerFactory

NOW = datetime(2026, 5, 6, 12, 0, 0, tzinfo=UTC)


def _state(server: McpServer) -> str:
    return McpServer.objects.values_list("import_task_state", flat=True).get(pk=server.pk)


@pytest.mark.django_db
def test_a_task_moves_its_server_from_queued_to_running_to_idle():
    """The token handed out when queuing moves the state through running back to idle."""
    server = McpServerFactory.create()
    assert _state(server) == ImportTaskState.IDLE
    token = import_state.mark_queued(server)
    assert _state(server) == ImportTaskState.QUEUED
    import_state.mark_running(server.pk, token)
    assert _state(server) == ImportTaskState.RUNNING
    import_state.mark_idle(server.pk, token)
    assert _state(server) == ImportTaskState.IDLE


@pytest.mark.django_db
def test_an_older_task_leaves_a_newer_imports_state_alone():
    """A task queued earlier that starts or ends late cannot clear the state of the latest import."""
    server = McpServerFactory.create()
    old = import_state.mark_queued(server)
    new = import_state.mark_queued(server)
    import_state.mark_running(server.pk, new)
    import_state.mark_idle(server.pk, old)
    import_state.mark_running(server.pk, old)
    assert _state(server) == ImportTaskState.RUNNING
    import_state.mark_idle(server.pk, new)
    assert _state(server) == ImportTaskState.IDLE


@pytest.mark.django_db
def test_a_crashed_task_ends_idle_with_an_error_that_says_nothing_changed():
    """A task that raised is an outcome: Error, naming the exception class, and idle again."""
    server = McpServerFactory.create(import_status=ImportStatus.OK)
    token = import_state.mark_queued(server)
    import_state.mark_running(server.pk, token)
    import_state.mark_crashed(server.pk, token, "django.db.utils.ProgrammingError")
    server.refresh_from_db()
    assert (server.import_task_state, server.import_status) == (ImportTaskState.IDLE, ImportStatus.ERROR)
    assert server.import_error == (
        "the import task failed (django.db.utils.ProgrammingError); nothing was changed; see the worker's log"
    )


def test_running_is_stalled_only_past_the_budget_and_the_grace():
    """A run is trusted up to its budget plus the grace; one second later it reads as stalled."""
    limit = timedelta(seconds=20) + import_state.STALL_GRACE
    assert not import_state.stalled("running", NOW - limit, 20, NOW)
    assert import_state.stalled("running", NOW - limit - timedelta(seconds=1), 20, NOW)


def test_queued_and_idle_are_never_stalled():
    """A queue may be long and an idle server waits for nothing: only a run can be stalled."""
    long_ago = NOW - timedelta(days=3)
    assert not import_state.stalled("queued", long_ago, 20, NOW)
    assert not import_state.stalled("idle", long_ago, 20, NOW)
    assert not import_state.stalled("running", None, 20, NOW)
