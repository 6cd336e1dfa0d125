"""Liveness is observed, not inferred (ADR-154): stamp each successful operation.

An operator reading "last contact 2 minutes ago" next to a failing tool knows the
server answers and the tool is the problem; so only a completed operation may stamp,
and the stamp must never cost the caller its answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from .mcp.endpoint import Endpoint
from .models import McpServer

logger = logging.getLogger("nr_llm.health")


class HealthRecorder:
    """The client's health sink: one UPDATE of two columns per successful operation.

    ``now`` is the wall-clock seam (a stamp is a point in time an operator reads, not
    a duration), injected so tests pin it instead of sleeping.
    """

    def __init__(self, now: Callable[[], datetime] = timezone.now) -> None:
        self._now = now

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        try:
            # A savepoint: a failing write inside the caller's transaction must not
            # leave that transaction aborted (PostgreSQL) for the work that follows.
            with transaction.atomic():
                # QuerySet.update() leaves `updated` (auto_now) and the import fields alone:
                # a contact is not an edit, and must not hide when an operator last changed the row.
                McpServer.objects.filter(identifier=endpoint.identifier).update(
                    last_contact=self._now(), last_latency_ms=max(0, int(latency_ms))
                )
        except Exception:
            # A reporting boundary: the operation already has its answer, and a
            # bookkeeping failure must never turn that into an error.
            logger.warning("could not record contact with MCP server %s", endpoint.identifier, exc_info=True)
