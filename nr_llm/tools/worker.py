"""The task a worker of the site's task backend runs for an enqueued call (``tools.enqueue``).

``run_tool_call(call_id)`` claims the call's row (``governance/queued.py``) and runs it through
the one execution path (``execution.run_claimed``): the same checks, ledger writes and "may have
run" rules as ``execute``. A delivery that finds nothing to claim (a redelivery, a retry, a call
another worker runs, held or finished) sends nothing and reports the row's state.
"""

from __future__ import annotations

import logging
from typing import Any

import django

from ..conf import conf
from ..governance import queued
from ..governance.decisions import DecisionRefused, parse_call_id
from .execution import run_claimed

if django.VERSION >= (6, 0):
    from django.tasks import task
else:  # Django 5.2: the backport the framework was upstreamed from.
    from django_tasks import task  # type: ignore[no-redef]

logger = logging.getLogger("nr_llm.tools")


@task()
def run_tool_call(call_id: str) -> dict[str, Any]:
    """Run the enqueued call ``call_id`` once; the report travels back as JSON (a task result must)."""
    try:
        pk = parse_call_id(call_id)
    except DecisionRefused:
        return {"call_id": call_id, "ran": False, "status": "unknown"}
    claimed = queued.claim(pk)
    if claimed is None:
        return {"call_id": str(pk), "ran": False, "status": "gone"}
    if claimed.approved is None:
        # Not this delivery's to run: said in the worker's log, the row keeps the truth.
        logger.info("tool call %s is %s; this delivery runs nothing", pk, claimed.call.status)
        return {"call_id": str(pk), "ran": False, "status": claimed.call.status}
    recorder = queued.ProgressRecorder(pk)
    try:
        result = run_claimed(
            claimed.call,
            approved=claimed.approved,
            on_progress=recorder,
            budget=conf.QUEUED_OPERATION_TIMEOUT,
        )
    finally:
        recorder.flush()
    return {"call_id": str(pk), "ran": True, "status": result.status}
