"""Resources of MCP servers for a site's code: what is enabled, and reading one.

- ``available(data_class_ceiling=None)`` / ``aavailable``: the enabled resources and templates;
- ``read(uri, *, server, actor=None, data_class_ceiling=None, client=None)`` / ``aread``: a
  listed resource, a URI an enabled template describes, or a link a tool of that server
  returned (``remember_links``), as a ``ResourceResult``; every read leaves a ledger row.
"""

from __future__ import annotations

from ..tools import threads
from .reading import Resource, ResourceReader, ResourceResult, available, read, remember_links


async def aavailable(data_class_ceiling: str | None = None) -> list[Resource]:
    return await threads.run(available, data_class_ceiling)


async def aread(
    uri: str,
    *,
    server: str,
    actor: object = None,
    data_class_ceiling: str | None = None,
    client: ResourceReader | None = None,
) -> ResourceResult:
    """``read`` for an async caller, on the tool-call pool (tools/threads.py: why there, and how its
    threads give their database connections back)."""
    return await threads.run(
        read, uri, server=server, actor=actor, data_class_ceiling=data_class_ceiling, client=client
    )


__all__ = [
    "Resource",
    "ResourceReader",
    "ResourceResult",
    "aavailable",
    "aread",
    "available",
    "read",
    "remember_links",
]
