"""Liveness is observed, not inferred (ADR-154): stamp each successful operation."""

from __future__ import annotations

import logging

from django.utils import timezone

from .mcp.endpoint import Endpoint
from .models import McpServer

logger = logging.getLogger("nr_llm.health")


class HealthRecorder:
    """The client's health sink: one UPDATE of two columns per successful operation."""

    def record_contact(self, endpoint: Endpoint, latency_ms: int) -> None:
        try:
            # QuerySet.update() leaves `updated` (auto_now) and the import fields alone:
            # a contact is not an edit, and must not hide when an operator last changed the row.
            McpServer.objects.filter(identifier=endpoint.identifier).update(
                last_contact=timezone.now(), last_latency_ms=max(0, int(latency_ms))
            )
        except Exception:
            # A reporting boundary: the tool call already has its answer, and a
            # bookkeeping failure must never turn that into an error.
            logger.warning("could not record contact with MCP server %s", endpoint.identifier, exc_info=True)
