"""A process of its own on a SQLite file database, for what one test process cannot show:
``python -m tests.own_transaction_child PATH MODE`` (``tests/test_own_transaction_process.py``).

- ``migrate``: create the schema in PATH (WAL mode, as the operator guide recommends).
- ``stale-read``: leave a read open on this connection, let another connection commit, then
  write a call's row in place; prints how the write ended.
- ``hand-over-and-exit``: hand a write over without waiting for it, and exit at once.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
import uuid

path, mode = sys.argv[1], sys.argv[2]
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
os.environ["DATABASE_URL"] = f"sqlite:///{path}"

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.utils import timezone  # noqa: E402

settings.DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = (
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
)

from nr_llm import own_transaction  # noqa: E402
from nr_llm.governance import ledger  # noqa: E402
from nr_llm.models import McpServer, ToolCall  # noqa: E402


def row(name: str) -> ToolCall:
    return ToolCall(
        id=uuid.uuid4(), created=timezone.now(), tool_name=name, status="running", started_at=timezone.now()
    )


if mode == "migrate":
    call_command("migrate", verbosity=0)
    for n in range(200):
        row(f"seed{n}").save(force_insert=True)
elif mode == "stale-read":
    rows = ToolCall.objects.all().iterator(chunk_size=20)
    next(rows)  # a read left open on this connection, as a loop over a queryset has it
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("UPDATE nr_llm_toolcall SET era = 'x' WHERE tool_name = 'seed1'")
    other.close()
    started = time.monotonic()
    try:
        ledger.write(lambda: row("in-the-loop").save(force_insert=True))
        print(f"written in {time.monotonic() - started:.2f} s")
    except ledger.LedgerUnavailable as exc:
        print(f"refused after {time.monotonic() - started:.2f} s: {exc}")
    print("rows read after it:", sum(1 for _ in rows))
elif mode == "hand-over-and-exit":

    def slow_write() -> None:
        time.sleep(0.3)
        McpServer.objects.create(identifier="handed", name="Handed over", url="https://mcp.example/mcp")

    own_transaction.hand_over(slow_write)
    # The process ends here, with the write still running on a daemon writer thread.
