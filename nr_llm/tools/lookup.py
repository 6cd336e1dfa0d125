"""The catalogue rows a tool call (or a turn) runs: one indexed query through the ORM.

Each call reads its tool's row with its server's (``select_related``: one query, no second
to reach the server), so every decision that lets a call run rests on the catalogue as it is
now: an operator's change reaches the very next call.
"""

from __future__ import annotations

from collections.abc import Collection

from ..models import McpTool


def tool_by_name(name: str) -> McpTool | None:
    """The enabled-or-not catalogue row named ``name`` with its server attached, or None."""
    # No ordering: the model's default would sort the one row by its server.
    found = McpTool.objects.select_related("server").filter(tool_name=name).order_by()[:1]
    return next(iter(found), None)


def tools_by_names(names: Collection[str]) -> dict[str, McpTool]:
    """``tool_by_name`` for the names of a model's turn, in one query: the rows found, by name."""
    if not names:
        return {}
    rows = McpTool.objects.select_related("server").filter(tool_name__in=names).order_by()
    return {row.tool_name: row for row in rows}
