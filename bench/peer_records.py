"""The peer for event emission: two plain stdlib records per request, nothing else.

A middleware (no wrapper, no nr_llm) that hands two records to a logger with a
``NullHandler`` on every request, through the same two stdlib calls ``nr_llm`` uses
(``Logger.makeRecord`` + ``Logger.handle``; ``Logger.info`` would also walk the stack
for the caller). Whatever this costs, no design that sends an access record and an
event through logging can cost less.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger("bench.peer")


class TwoRecordsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        for message in ("access", "event"):
            record = logger.makeRecord(logger.name, logging.INFO, __file__, 0, message, (), None)
            logger.handle(record)
        return response
