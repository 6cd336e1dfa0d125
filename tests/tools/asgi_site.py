"""An ASGI site whose async views call the tool API, served by uvicorn for test_asgi_views.py.

``python -m tests.tools.asgi_site``: migrates its own SQLite file (``DATABASE_URL``), registers
the MCP server at ``NR_LLM_TEST_MCP_URL`` with its ``slow`` tool enabled, binds 127.0.0.1 on an
OS-chosen port and prints ``PORT <n>`` (tests.peers.running).
"""

from __future__ import annotations

import os
import socket
import threading

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.tools.asgi_settings")

import django  # noqa: E402

django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.http import HttpRequest, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

from nr_llm import tools  # noqa: E402
from nr_llm.models import ToolCall  # noqa: E402

SLOW = "mcp_peer_slow"


async def call(request: HttpRequest) -> JsonResponse:
    """One slow call through aexecute; the answer names the thread the view ran on."""
    seconds = float(request.GET.get("seconds", "1"))
    result = await tools.aexecute(SLOW, {"seconds": seconds}, actor="asgi")
    return JsonResponse({"status": result.status, "text": result.text, "view_thread": threading.get_ident()})


async def turn(request: HttpRequest) -> JsonResponse:
    """A turn of three slow calls through aexecute_many."""
    calls = [(SLOW, {"seconds": 1}) for _ in range(3)]
    results = await tools.aexecute_many(calls, actor="asgi")
    return JsonResponse({"statuses": [result.status for result in results]})


async def rows(request: HttpRequest) -> JsonResponse:
    statuses = [status async for status in ToolCall.objects.values_list("status", flat=True)]
    return JsonResponse({"statuses": statuses})


urlpatterns = [path("call/", call), path("turn/", turn), path("rows/", rows)]
application = get_asgi_application()


def _seed() -> None:
    from django.core.management import call_command

    from nr_llm.models import DataClass, McpServer, McpTool

    call_command("migrate", verbosity=0)
    server = McpServer.objects.create(
        identifier="peer",
        name="Peer",
        url=os.environ["NR_LLM_TEST_MCP_URL"],
        data_class=DataClass.PUBLIC_CONTENT,
        requires_approval=False,
        enabled=True,
    )
    schema = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    McpTool.objects.create(
        server=server, tool_name=SLOW, remote_name="slow", enabled=True, input_schema=schema
    )


def main() -> None:
    import uvicorn

    _seed()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config("tests.tools.asgi_site:application", lifespan="off", log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
