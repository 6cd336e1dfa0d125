"""The ledger rows of resource reads and prompt gets, through the ledger's public functions.

One small module on purpose: the ledger's write path is being rewritten, and this is the one
place to re-point. A read is recorded as a finished row named ``resources/read <server> <key>``
(``prompts/get <server> <name>``; the key is what the server offered, never a caller's URI:
reading.py), its arguments (the URI, the prompt's arguments) encrypted as a
call's are, who asked, how long it took and how it ended; the contents themselves are not kept.
The row names its server as a tool call's does (its columns, its data class). As for a tool
call, no row means no request: a read whose running row cannot be written is refused unsent
(``started`` returns the reason); an outcome that cannot be written is logged and the answer stands.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ..governance import ledger
from ..governance.models import ToolCallStatus

if TYPE_CHECKING:
    from ..models import McpServer

logger = logging.getLogger("nr_llm.resources")


def started(
    operation: str,
    server: str,
    key: str,
    arguments: dict[str, Any],
    actor: object,
    ceiling: str,
    row: McpServer | None = None,
) -> uuid.UUID | str:
    """The running row's id, or why it could not be written (then nothing may be sent)."""
    call = _call(operation, server, key, arguments, actor, ceiling, row)
    try:
        return ledger.open_call(call, ToolCallStatus.RUNNING, timezone.now())
    except ledger.LedgerUnavailable as exc:
        logger.error("the ledger row of %s on %s could not be written: %s", operation, server, exc.for_log())
        return (
            f"{operation} on MCP server {server!r} could not be recorded in the ledger ({exc}); "
            "it was not sent"
        )


def _call(
    operation: str,
    server: str,
    key: str,
    arguments: dict[str, Any],
    actor: object,
    ceiling: str,
    row: McpServer | None,
) -> ledger.NewCall:
    return ledger.NewCall(
        tool_name=f"{operation} {server} {key}",
        canonical=json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        actor=ledger.actor_fields(actor),
        data_class_ceiling=ceiling,
        server=row,
    )


def refused(
    operation: str,
    server: str,
    key: str,
    arguments: dict[str, Any],
    actor: object,
    ceiling: str,
    why: str,
    row: McpServer | None = None,
    error_kind: str = "refused",
) -> None:
    """A read refused before any contact: written finished, at once."""
    call = _call(operation, server, key, arguments, actor, ceiling, row)
    try:
        ledger.open_call(call, ToolCallStatus.FAILED, timezone.now(), error_kind=error_kind, result_text=why)
    except ledger.LedgerUnavailable:
        logger.error(
            "the ledger row of a refused %s on %s could not be written", operation, server, exc_info=True
        )


def finished(
    call_id: uuid.UUID, *, is_error: bool, error_kind: str, duration_ms: int, era: str, note: str
) -> None:
    try:
        ledger.finish(
            call_id,
            is_error=is_error,
            error_kind=error_kind,
            duration_ms=duration_ms,
            era=era,
            result_text=note,
            now=timezone.now(),
        )
    except ledger.LedgerUnavailable:
        logger.error("the outcome of ledger row %s could not be written", call_id, exc_info=True)
