"""An operator's trial call of one tool, timed against the budget it runs under."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..mcp import data_url, json_text
from ..models import McpTool
from ..tools import execute
from ..tools.elicit import Responder


@dataclass(frozen=True)
class TrialReport:
    text: str
    is_error: bool
    elapsed_seconds: float
    budget_seconds: float
    #: "awaiting_approval" when the server requires approval: nothing ran (see ``call_id``).
    status: str = "succeeded"
    call_id: uuid.UUID | None = None
    #: The answer's images as data URLs (image MIME types only: content.py kept no other).
    images: tuple[str, ...] = ()
    #: The structured content, pretty-printed; "" when there is none.
    structured: str = ""


def try_tool(
    tool: McpTool,
    arguments: dict[str, Any],
    clock: Callable[[], float] = time.monotonic,
    actor: object = None,
    responder: Responder | None = None,
) -> TrialReport:
    """Call ``tool`` through the same API the site uses, so the trial proves what a model would get:
    recorded in the ledger under ``actor``, and held for approval like any other call.
    ``responder``: answers the server's questions (trial_questions.TrialResponder: the operator)."""
    started = clock()
    result = execute(tool.tool_name, arguments, actor=actor, responder=responder)
    return TrialReport(
        text=result.text,
        is_error=result.is_error,
        elapsed_seconds=clock() - started,
        budget_seconds=tool.server.budget_seconds,
        status=result.status,
        call_id=result.call_id,
        images=tuple(data_url(block) for block in result.images if block["mimeType"].startswith("image/")),
        structured=json_text(result.structured, indent=2) if result.structured is not None else "",
    )
