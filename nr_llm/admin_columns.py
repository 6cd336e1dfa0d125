"""What the server changelist shows, as plain functions of a row and a clock.

Kept out of servers/admin.py so each column is testable with a fixed ``now`` and no request.
Every piece of text that came from an operator or a remote server goes through
``format_html`` / ``escape``: a server's self-description is data, never markup.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from django.contrib import messages
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator
from django.utils.timesince import timesince

from .catalogue.import_state import stalled
from .mcp import ConnectionReport
from .models import AuthPlacement, DataClass, ImportStatus, ImportTaskState
from .servers.readiness import Hold
from .tasks import ImportStart

TRANSPORT = "Streamable HTTP"
ERROR_PREVIEW_CHARS = 80
#: A hover title holds more than a cell, but not a whole 4,000-character description.
TITLE_CHARS = 500


def last_contact(contact: datetime | None, latency_ms: int | None, now: datetime) -> str:
    """ "3 minutes ago · 42 ms", or "never" before the first successful operation."""
    if contact is None:
        return "never"
    ago = _ago(contact, now)
    return ago if latency_ms is None else f"{ago} · {latency_ms} ms"


def _ago(moment: datetime, now: datetime) -> str:
    # timesince() says "0 minutes" both for the last minute and for a stamp from a clock
    # slightly ahead of this one; neither should read as a measurement.
    if (now - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment, now, depth=1)} ago"


def authentication(stored: str, header_name: str) -> SafeString:
    """The configured placement; a value this version does not know is shown as stored and flagged."""
    if stored not in AuthPlacement.values:
        return format_html('<strong class="nr-llm-warning">unknown: {}</strong>', stored)
    if stored == AuthPlacement.HEADER:
        return format_html("{} ({})", AuthPlacement(stored).label, header_name)
    return format_html("{}", AuthPlacement(stored).label)


def connection(stored: str, header_name: str) -> SafeString:
    """The transport and the authentication, as one line under the contact."""
    if stored == AuthPlacement.NONE:
        return format_html("{}, no authentication", TRANSPORT)
    return format_html("{}, {}", TRANSPORT, authentication(stored, header_name))


def data_class(stored: str) -> SafeString:
    if not stored:
        return format_html('<strong class="nr-llm-warning">{}</strong>', "undeclared: imports refused")
    if stored not in DataClass.values:
        return format_html('<strong class="nr-llm-warning">unknown: {}</strong>', stored)
    return format_html("{}", DataClass(stored).label)


def tools(enabled: int, total: int, orphaned: int, imported: bool = True) -> str:
    """ "1 / 5 enabled"; before a first import "0 tools (not imported yet)", not a ratio of nothing."""
    if not total and not imported:
        return "0 tools (not imported yet)"
    text = f"{enabled} / {total} enabled"
    return f"{text}, {orphaned} orphaned" if orphaned else text


def breakable(name: str) -> SafeString:
    """``name`` escaped, with a line-break opportunity after each ``_`` and ``-``.

    Tool names and identifiers have no spaces: without these, a narrow column either breaks
    them mid-word or pushes the table wider than the screen.
    """
    parts = re.split(r"(?<=[_-])", name)
    return format_html_join(SafeString("<wbr>"), "{}", ((part,) for part in parts))


def clipped(text: str, chars: int) -> SafeString:
    """``text`` on one line, clipped to ``chars``; the whole text (clipped far later) as its title."""
    flat = " ".join(text.split())
    return format_html(
        '<span title="{}">{}</span>', Truncator(flat).chars(TITLE_CHARS), Truncator(flat).chars(chars)
    )


def last_import(status: str, imported: datetime | None, now: datetime) -> str:
    label = ImportStatus(status).label if status in ImportStatus.values else status
    if imported is None:
        return label
    return f"{label} · {_ago(imported, now)}"


def import_task(state: str, since: datetime | None, budget_seconds: float, now: datetime) -> SafeString:
    """The admin's latest import while it waits or runs; "" once it is done (the status says how)."""
    ago = _ago(since, now) if since else "at an unknown time"
    if stalled(state, since, budget_seconds, now):
        return format_html(
            '<strong class="nr-llm-warning">Import stalled: started {}, longer than its {} s budget '
            "allows; its worker has probably stopped. Import again.</strong>",
            ago,
            f"{budget_seconds:g}",
        )
    if state == ImportTaskState.QUEUED:
        return format_html("Import queued {}", ago)
    if state == ImportTaskState.RUNNING:
        return format_html("Import running, started {}", ago)
    return SafeString("")


def hold_flags(found: tuple[Hold, ...]) -> SafeString:
    """The row's flags, each with its whole sentence on hover."""
    return format_html_join(
        "",
        '<div class="nr-llm-detail"><strong class="nr-llm-warning" title="{}">{}</strong></div>',
        ((h.why, h.flag) for h in found),
    )


def approval(required: bool) -> str:
    return "approval required" if required else "no approval step"


def error_preview(error: str) -> str:
    """Whitespace collapsed and clipped: the whole text is on the change page."""
    return Truncator(" ".join(error.split())).chars(ERROR_PREVIEW_CHARS)


def connection_summary(identifier: str, report: ConnectionReport) -> str:
    """One line for a reachable server; plain text, escaped where it is shown."""
    parts = [f"Connection to {identifier}: reachable"]
    if report.latency_ms is not None:
        parts[0] += f" in {report.latency_ms} ms"
    if report.protocol_version:
        era = {"modern": " (no session, server/discover)", "handshake": " (initialize handshake)"}
        parts.append(f"protocol {report.protocol_version}{era.get(report.era, '')}")
    if report.server_name or report.server_version:
        parts.append(f"server “{report.server_name}” version {report.server_version or '?'}")
    return " · ".join(parts)


def import_message(start: ImportStart) -> tuple[str, int]:
    """The message (and its level) for one started import."""
    # message_user capitalises the first letter, so the identifier never leads.
    who = f"Import of {start.identifier}"
    if start.state == "queued":
        return f"{who} queued as task {start.task_id}; the counts appear here once it has run.", messages.INFO
    if start.state == "failed" or start.report is None:
        return f"{who} failed in the task ({start.failure}); see the server log.", messages.ERROR
    report = start.report
    if report.refused:
        return f"{who} refused: {report.refused}", messages.ERROR
    counts = f"{report.imported} imported, {report.skipped} skipped, {report.orphaned} orphaned"
    text = f"{who} ran: {counts}."
    if report.imported:
        text += " New tools start disabled: enable them one by one under MCP tools."
    level = messages.SUCCESS
    if report.changed:
        level = messages.WARNING
        text += (
            f" Disabled because their definition changed since they were enabled: "
            f"{'; '.join(str(changed) for changed in report.changed)}. Open each under MCP tools, "
            "read what changed, and enable it again if it is still what you want."
        )
    if report.skip_reasons:
        shown = "; ".join(report.skip_reasons[:3])
        more = f" (and {len(report.skip_reasons) - 3} more)" if len(report.skip_reasons) > 3 else ""
        return f"{text} Skipped: {shown}{more}.", messages.WARNING
    return text, level


def pretty_json(value: Any) -> SafeString:
    """A JSON value as the admin shows it: indented, keys sorted, escaped."""
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))
