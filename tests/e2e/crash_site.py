"""A site process for the crash test (tests/e2e/test_database_crash.py), on the database of
``DATABASE_URL`` and the MCP server of ``NR_LLM_CRASH_MCP_URL``.

It migrates, imports the server's catalogue, prints ``READY`` and waits for a line on stdin;
then runs one tool call, prints its result as a JSON line and waits again (still connected,
as a live worker is) until its stdin closes.
"""

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from django.core.management import call_command  # noqa: E402

from nr_llm import tools  # noqa: E402
from nr_llm.catalogue import import_catalogue  # noqa: E402
from nr_llm.models import McpServer, McpTool  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    server = McpServer.objects.create(
        identifier="crash",
        name="Crash",
        url=os.environ["NR_LLM_CRASH_MCP_URL"],
        data_class="publicContent",
        enabled=True,
        requires_approval=False,
    )
    assert import_catalogue(server).ok
    McpTool.objects.update(enabled=True)
    print("READY", flush=True)
    sys.stdin.readline()
    result = tools.execute("mcp_crash_echo", {"text": "ran before the crash"}, actor="crash")
    print(
        json.dumps({"call_id": str(result.call_id), "text": result.text, "status": result.status}), flush=True
    )
    sys.stdin.readline()


if __name__ == "__main__":
    main()
