"""Catalogue imports from the admin, and ledger retention, go through Django's Tasks framework.

With the default immediate backend the import runs inside the request, as a direct call
would; a site that configures a database or queue backend (``TASKS``, e.g. django-tasks-db
and its ``db_worker``) takes imports off the request path without any change here. The
caller learns which happened; the server row says queued, running, then the outcome.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Literal

import django

from .catalogue import ImportReport, import_catalogue, import_state
from .governance.retention import prune
from .models import McpServer

logger = logging.getLogger("nr_llm.tasks")

if django.VERSION >= (6, 0):
    from django.tasks import TaskResultStatus, task
else:  # Django 5.2: the backport the framework was upstreamed from.
    from django_tasks import TaskResultStatus, task  # type: ignore[assignment,no-redef]


@task()
def import_server_catalogue(server_pk: int, token: str = "") -> dict[str, Any]:
    """Import one server's catalogue; the report travels back as JSON (a task result must).

    ``token`` (from ``import_state.mark_queued``) lets the task move the server's import
    state; a task enqueued without one imports all the same.
    """
    server = McpServer.objects.filter(pk=server_pk).first()
    if server is None:
        # Deleted while the task waited in a queue: a refusal to report, not a crash.
        gone = ImportReport(
            f"#{server_pk}", 0, 0, 0, (), refused="the server was deleted before its import ran"
        )
        return dataclasses.asdict(gone)
    import_state.mark_running(server_pk, token)
    try:
        report = import_catalogue(server)
    except Exception as exc:
        import_state.mark_crashed(server_pk, token, _class_path(exc))
        raise  # the task backend records the failure and its traceback
    import_state.mark_idle(server_pk, token)
    return dataclasses.asdict(report)


@task()
def prune_ledger(days: int | None = None) -> dict[str, Any]:
    """Retention on the worker queue: what ``mcp_prune_ledger`` does, scheduled by the site.

    The report travels back as JSON; each line is also logged for a worker's log.
    """
    report = prune(days)
    for line in report.lines():
        logger.info("%s", line)
    return {
        "days": report.days,
        "cutoff": report.cutoff.isoformat() if report.cutoff else None,
        "removed": report.removed,
        "batches": report.batches,
        "reaped": report.reaped,
    }


@dataclass(frozen=True)
class ImportStart:
    """What starting an import did: ``ran`` (with its report), ``queued``, or ``failed``."""

    identifier: str
    task_id: str
    state: Literal["ran", "queued", "failed"]
    report: ImportReport | None = None
    # The exception class path of a task that crashed; the traceback is in the task result.
    failure: str = ""


def start_import(server: McpServer) -> ImportStart:
    """Enqueue the import of ``server``'s catalogue on the default task backend."""
    # Queued before the enqueue: a worker may start the task before enqueue() returns, and
    # its "running" must not be overwritten by a late "queued".
    token = import_state.mark_queued(server)
    try:
        result = import_server_catalogue.enqueue(server.pk, token)
    except Exception as exc:
        # A reporting boundary: a misconfigured or unreachable task backend is the
        # operator's to fix, and must reach them as a message, not as a 500 page.
        logger.exception("could not enqueue the catalogue import of MCP server %s", server.identifier)
        import_state.mark_idle(server.pk, token)
        return ImportStart(server.identifier, "", "failed", failure=_class_path(exc))
    if result.status == TaskResultStatus.SUCCESSFUL:
        value = result.return_value
        report = ImportReport.from_json(value)
        return ImportStart(server.identifier, str(result.id), "ran", report=report)
    if result.status == TaskResultStatus.FAILED:
        failure = result.errors[-1].exception_class_path if result.errors else "unknown error"
        return ImportStart(server.identifier, str(result.id), "failed", failure=failure)
    return ImportStart(server.identifier, str(result.id), "queued")


def _class_path(exc: BaseException) -> str:
    return f"{type(exc).__module__}.{type(exc).__qualname__}"
