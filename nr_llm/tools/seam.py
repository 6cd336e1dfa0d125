"""``using_client``: a site's tests swap the MCP client, and nothing else.

Inside ``with tools.using_client(fake):`` every place that would build the installation's MCP
client (``execute``, ``execute_many``, ``resume`` and their twins, catalogue imports, resource
reads, prompts) gets ``fake`` instead. Everything around the client runs as in production: the
catalogue row, the ceiling, approval, the ledger's rows and their writes. So a test that passes
here took the path a real call takes; only the network is missing.

``fake`` needs the methods of ``McpClient`` the test reaches: ``call_tool(endpoint, name,
arguments=None, *, input_schema=None)`` for a call, ``list_tools(endpoint, on_page=None,
fresh=False)`` for an import. The swap is process-wide (the calls of a turn run on other
threads) and blocks nest; it is a seam for tests, not for a running site.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..servers import endpoints


@contextmanager
def using_client(fake: object) -> Iterator[object]:
    """Within the block, the installation's MCP client is ``fake``; yields ``fake``."""
    endpoints._stand_in.append(fake)
    try:
        yield fake
    finally:
        endpoints._stand_in.remove(fake)
