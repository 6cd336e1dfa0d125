"""Benchmark: the Tool calls and Approvals pages at 100k and 1M ledger rows, and retention's rate.

Run (PostgreSQL only; a throw-away test database named after yours is created and dropped)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nrllm_bench .venv/bin/python -m bench.ledger_admin \
        [--sizes 100000 1000000] [--rounds 7]

For each size the ledger is seeded in one ``INSERT … SELECT FROM generate_series`` (no ORM
loop): calls over the last 30 days, 5 servers of 20 tools (in their catalogues), 200 actors,
mostly succeeded, some failed, denied and expired, a few awaiting approval or approved; then
``VACUUM ANALYZE``, as
autovacuum would have done on a live table. Each page is fetched through Django's test client
as a superuser (the whole view: the expiry sweep, filters, counts, rendering), warm, and the
median of ``--rounds`` is printed for both sizes with their ratio.

The peer, in the same run: Django's defaults for the same list (a full ``COUNT``, the
``AllValuesFieldListFilter`` filters, the date hierarchy, ``icontains`` search), the page this
app had before, on the same rows. Last, the write path's price of the indexes (one call's
two ledger writes) and ``mcp_prune_ledger``'s rate: the rows older than 15 days deleted in
batches, in rows per second.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from django.contrib import admin  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import override_settings  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.utils import timezone  # noqa: E402

from nr_llm.governance import ledger  # noqa: E402
from nr_llm.governance.retention import prune  # noqa: E402
from nr_llm.models import DataClass, McpServer, McpTool, ToolCall, ToolCallStatus  # noqa: E402
from nr_llm.own_transaction import close_writers  # noqa: E402

SERVERS = 5
TOOLS = 20
ACTORS = 200
SPAN_DAYS = 30
PRUNE_DAYS = 15
BUDGET_MS = 300.0
MAX_RATIO = 1.5

# Every column, in one statement: row i is i * span / n seconds old. Statuses by i mod 1000:
# 0-899 succeeded, 900-969 failed, 970-989 denied, 990-998 expired, 999 awaiting approval (or
# approved, every other one) when it is among the newest hour's rows, else expired.
SEED = """
INSERT INTO nr_llm_toolcall (
    id, created, tool_name, tool_id, server_id, server_identifier, remote_name, tool_description,
    tool_input_schema, data_class, data_class_ceiling, arguments_ciphertext, arguments_digest,
    actor_user_id, actor_label, status, error_kind, era, duration_ms, result_preview_ciphertext,
    expires_at, approver_id, approver_label, approved_digest, self_approved, decided_at,
    decision_note, started_at, finished_at
)
SELECT
    md5(i::text)::uuid, t,
    'mcp_srv' || (i % {servers}) || '_tool' || (i / {servers} % {tools}), NULL, NULL,
    'srv' || (i % {servers}), 'tool' || (i / {servers} % {tools}), 'Look up the thing it is asked for.',
    '{{"type": "object"}}'::jsonb, 'editorContent', 'secretAdjacent',
    'gAAAAA' || repeat(md5(i::text), 5), md5(i::text) || md5((i + 1)::text),
    NULL, 'agent-' || (i % {actors}), s,
    CASE WHEN s = 'failed' THEN 'tool_error' WHEN s = 'expired' THEN 'expired' ELSE '' END,
    CASE WHEN s IN ('succeeded', 'failed') THEN 'modern' ELSE '' END,
    CASE WHEN s IN ('succeeded', 'failed') THEN 20 + (i::bigint * 7919) % 2000 END,
    'gAAAAA' || repeat(md5((i + 2)::text), 3),
    CASE WHEN s IN ('awaiting_approval', 'approved') THEN t + interval '1 hour' END,
    NULL, CASE WHEN s IN ('denied', 'approved') THEN 'approver' ELSE '' END,
    CASE WHEN s = 'approved' THEN md5(i::text) || md5((i + 1)::text) ELSE '' END, false,
    CASE WHEN s IN ('denied', 'approved') THEN t + interval '1 minute' END, '',
    CASE WHEN s IN ('succeeded', 'failed') THEN t END,
    CASE WHEN s NOT IN ('awaiting_approval', 'approved') THEN t + interval '1 second' END
FROM (
    SELECT i, t,
        CASE
            WHEN i % 1000 < 900 THEN 'succeeded'
            WHEN i % 1000 < 970 THEN 'failed'
            WHEN i % 1000 < 990 THEN 'denied'
            WHEN i % 1000 < 999 OR t < now() - interval '1 hour' THEN 'expired'
            WHEN i % 2000 = 999 THEN 'awaiting_approval'
            ELSE 'approved'
        END AS s
    FROM (
        SELECT i, now() - (i * interval '{span} days') / {n} AS t FROM generate_series(1, {n}) AS i
    ) AS clock
) AS seeded
"""


class DjangoDefaultsAdmin(admin.ModelAdmin[ToolCall]):
    """The peer: the same list with Django's defaults (this app's page before issue 28)."""

    list_display = ["created", "tool_name", "server_identifier", "actor_label", "status"]
    list_filter = [
        "status",
        ("server_identifier", admin.AllValuesFieldListFilter),
        ("tool_name", admin.AllValuesFieldListFilter),
        ("actor_label", admin.AllValuesFieldListFilter),
    ]
    date_hierarchy = "created"
    search_fields = ["tool_name", "server_identifier", "actor_label"]
    list_per_page = 50


peer_site = admin.AdminSite(name="peer")
peer_site.register(ToolCall, DjangoDefaultsAdmin)
urls = types.ModuleType("bench_ledger_urls")
urls.urlpatterns = [path("peer/", peer_site.urls), path("", include("project.urls"))]  # type: ignore[attr-defined]
sys.modules[urls.__name__] = urls

PAGES: list[tuple[str, str]] = [
    ("Tool calls", "/admin/nr_llm/toolcall/"),
    ("  status = failed", "/admin/nr_llm/toolcall/?status__exact=failed"),
    ("  server", "/admin/nr_llm/toolcall/?server_identifier=srv2"),
    ("  server + tool", "/admin/nr_llm/toolcall/?server_identifier=srv2&tool_name=mcp_srv2_tool3"),
    ("  tool alone (a link)", "/admin/nr_llm/toolcall/?tool_name=mcp_srv3_tool7"),
    ("  server + status = denied", "/admin/nr_llm/toolcall/?server_identifier=srv1&status__exact=denied"),
    ("  last 24 h", "/admin/nr_llm/toolcall/?since=24h"),
    ("  actor search", "/admin/nr_llm/toolcall/?q=agent-17"),
    ("  call id search", "/admin/nr_llm/toolcall/?q={call_id}"),
    ("  page 100", "/admin/nr_llm/toolcall/?p=100"),
    ("  sorted by status", "/admin/nr_llm/toolcall/?o=4"),
    ("Approvals (inbox)", "/admin/nr_llm/toolcallapproval/"),
    ("  all", "/admin/nr_llm/toolcallapproval/?status__exact=all"),
    (
        "  awaiting, one server",
        "/admin/nr_llm/toolcallapproval/?status__exact=awaiting_approval&server_identifier=srv4",
    ),
    ("a call's page", "/admin/nr_llm/toolcall/{call_id}/change/"),
    ("admin index (waiting count)", "/admin/"),
    ("MCP servers (awaiting counts)", "/admin/nr_llm/mcpserver/"),
    ("peer: Django defaults list", "/peer/nr_llm/toolcall/"),
    ("peer: + search", "/peer/nr_llm/toolcall/?q=agent-17"),
]


def seed(rows: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE nr_llm_toolcall")
        started = time.perf_counter()
        cursor.execute(SEED.format(servers=SERVERS, tools=TOOLS, actors=ACTORS, span=SPAN_DAYS, n=rows))
        inserted = time.perf_counter() - started
        cursor.execute("VACUUM ANALYZE nr_llm_toolcall")
    print(f"seeded {rows:,} rows in {inserted:.1f} s ({rows / inserted:,.0f} rows/s, indexes included)")


def use(database: str) -> None:
    """Point every connection, the ledger's threads' included, at ``database``."""
    connection.close()
    close_writers()  # they keep their connection open: the next write opens one anew
    # The handler's settings dict is shared by every thread's wrapper: new connections follow.
    connection.settings_dict["NAME"] = database


def fetch(client: Client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def time_pages(client: Client, databases: dict[int, str], rounds: int) -> dict[int, dict[str, float]]:
    """Median ms per page and size; the sizes alternate round by round (same machine load)."""
    samples: dict[int, dict[str, list[float]]] = {size: {} for size in databases}
    call_ids: dict[int, str] = {}
    for size, database in databases.items():
        use(database)
        call_ids[size] = str(ToolCall.objects.filter(status="succeeded").values_list("pk", flat=True).first())
    for round_ in range(rounds + 1):
        for size, database in databases.items():
            use(database)
            for label, url in PAGES:
                elapsed = fetch(client, url.format(call_id=call_ids[size]))
                if round_:  # the first round warms templates, plans and caches
                    samples[size].setdefault(label, []).append(elapsed)
    return {
        size: {label: statistics.median(v) for label, v in pages.items()} for size, pages in samples.items()
    }


def time_writes(count: int = 50) -> float:
    """Median ms of one call's two ledger writes (the row as it starts, its outcome): the
    indexes' price on the write path, at this size."""
    samples = []
    for _ in range(count):
        call = ledger.NewCall("mcp_srv0_tool0", '{"q": "x"}', ledger.actor_fields("bench"))
        started = time.perf_counter()
        call_id = ledger.open_call(call, ToolCallStatus.RUNNING, timezone.now())
        ledger.finish(
            call_id,
            is_error=False,
            error_kind="",
            duration_ms=5,
            era="",
            result_text="ok",
            now=timezone.now(),
        )
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


NEW_INDEXES = ("created", "status", "server", "tool", "actor", "inbox")


def time_row_writes(count: int = 200) -> float:
    """Median ms of a call's row written and finished by SQL alone on this connection (no
    thread of the ledger's own): what the indexes add, without the connection's cost."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        row = ToolCall(
            created=timezone.now(),
            tool_name="mcp_srv0_tool0",
            server_identifier="srv0",
            actor_label="bench",
            status=ToolCallStatus.RUNNING,
            started_at=timezone.now(),
        )
        row.save(force_insert=True)
        ToolCall.objects.filter(pk=row.pk, status=ToolCallStatus.RUNNING).update(
            status=ToolCallStatus.SUCCEEDED, duration_ms=5, finished_at=timezone.now()
        )
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def time_prune() -> tuple[int, float]:
    started = time.perf_counter()
    report = prune(PRUNE_DAYS)
    return report.total, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs=2, default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        sys.exit("PostgreSQL only: set DATABASE_URL=postgres://…")
    for name in ("nr_llm.access", "nr_llm.requests", "django.request"):
        logging.getLogger(name).setLevel(logging.ERROR)

    small, large = args.sizes
    old_name = connection.creation.create_test_db(verbosity=0)
    databases = {
        small: str(connection.settings_dict["NAME"]),
        large: f"{connection.settings_dict['NAME']}_large",
    }
    prunes: dict[int, tuple[int, float]] = {}
    writes: dict[int, float] = {}
    row_writes: dict[int, float] = {}
    try:
        with override_settings(ROOT_URLCONF=urls.__name__, ALLOWED_HOSTS=["*"], DEBUG=False):
            for identifier in range(SERVERS):
                server = McpServer.objects.create(
                    identifier=f"srv{identifier}",
                    name=f"Server {identifier}",
                    url=f"https://srv{identifier}.example/mcp",
                    data_class=DataClass.EDITOR_CONTENT,
                )
                McpTool.objects.bulk_create(
                    McpTool(
                        server=server,
                        remote_name=f"tool{n}",
                        tool_name=f"mcp_srv{identifier}_tool{n}",
                        input_schema={"type": "object", "properties": {}},
                    )
                    for n in range(TOOLS)
                )
            user = User.objects.create_superuser("bench", password="pw")
            client = Client()
            client.force_login(user)
            seed(small)
            connection.close()
            with connection._nodb_cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{databases[large]}" TEMPLATE "{databases[small]}"')
            use(databases[large])
            seed(large)
            timings = time_pages(client, databases, args.rounds)
            for size, database in databases.items():
                use(database)
                writes[size] = time_writes()
                row_writes[size] = time_row_writes()
                prunes[size] = time_prune()
            # The peer for the write path: the same writes, same table, without this issue's
            # indexes (measured alternately: with, then without).
            remaining = ToolCall.objects.count()
            indexed_writes = time_row_writes()
            with connection.cursor() as cursor:
                for name in NEW_INDEXES:
                    cursor.execute(f"DROP INDEX nr_llm_toolcall_{name}")
            bare_writes = time_row_writes()
    finally:
        use(databases[small])
        connection.close()
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{databases[large]}"')
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(
        f"\nPostgreSQL, median of {args.rounds} warm fetches per page (ms), whole view, sizes alternating\n"
    )
    print(f"| {'page':<38} | {f'{small:,} rows':>12} | {f'{large:,} rows':>12} | {'ratio':>6} | ok  |")
    print(f"|{'-' * 40}|{'-' * 14}|{'-' * 14}|{'-' * 8}|-----|")
    failures = []
    for label, _ in PAGES:
        a, b = timings[small][label], timings[large][label]
        peer = label.startswith("peer")
        ok = peer or (b < BUDGET_MS and b <= MAX_RATIO * a)
        if not ok:
            failures.append(label.strip())
        mark = "–" if peer else ("yes" if ok else "NO")
        print(f"| {label:<38} | {a:>12.1f} | {b:>12.1f} | {b / a:>5.2f}x | {mark:<3} |")
    print(
        f"\nbudget: every page < {BUDGET_MS:.0f} ms at {large:,} rows and <= {MAX_RATIO}x its {small:,} time"
    )
    for size, ms in writes.items():
        print(
            f"one call's ledger writes at {size:,} rows: {ms:.1f} ms through ledger.write (its own "
            f"transactions), {row_writes[size]:.2f} ms as the ORM's INSERT and UPDATE"
        )
    print(
        f"the same SQL at {remaining:,} rows (after the prune): {indexed_writes:.2f} ms with the 0009 "
        f"indexes, {bare_writes:.2f} ms without them ({indexed_writes / bare_writes:.2f}x)"
    )
    for size, (removed, seconds) in prunes.items():
        print(
            f"prune at {size:,} rows: {removed:,} rows older than {PRUNE_DAYS} days in {seconds:.1f} s "
            f"= {removed / seconds:,.0f} rows/s"
        )
    if failures:
        print("over budget: " + ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
