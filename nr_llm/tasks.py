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
from datetime import timedelta
from typing import Any, Literal

import django
from django.db.models import Q
from django.utils import timezone

from .catalogue import ImportReport, import_catalogue, import_state
from .conf import conf
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
    return dataclasses.asdict(_import(server, token))


@task()
def reimport_catalogues() -> dict[str, Any]:
    """The periodic re-import (``NR_LLM_REIMPORT_INTERVAL``): every enabled server that is not
    watched and was last imported longer ago than the interval, with the tools/list answer
    another process fetched while its server's ``ttlMs`` allows. Run it as often as you like
    (``manage.py mcp_watch`` enqueues it every interval): a server imported recently is skipped,
    so redelivery or two schedulers cost nothing. Off (nothing imported) while the setting is."""
    interval = conf.REIMPORT_INTERVAL
    if interval is None:
        return {"interval": None, "imported": []}
    due = timezone.now() - timedelta(seconds=interval)
    servers = McpServer.objects.filter(enabled=True, watch_changes=False).filter(
        Q(last_imported__isnull=True) | Q(last_imported__lt=due)
    )
    imported = []
    for server in servers.order_by("pk"):
        token = import_state.mark_queued(server)
        try:
            _import(server, token, fresh=False)
        except Exception:
            # A reporting boundary: one server's crash must not keep the others stale.
            logger.exception("periodic re-import of MCP server %s failed", server.identifier)
            continue
        imported.append(server.identifier)
    return {"interval": interval, "imported": imported}


def _import(server: McpServer, token: str, *, fresh: bool = True) -> ImportReport:
    import_state.mark_running(server.pk, token)
    try:
        report = import_catalogue(server, fresh=fresh)
    except Exception as exc:
        import_state.mark_crashed(server.pk, token, _class_path(exc))
        raise  # the task backend records the failure and its traceback
    import_state.mark_idle(server.pk, token)
    return report


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
