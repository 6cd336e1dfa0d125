"""Two imports of one server at once serialize on the server row (PostgreSQL only).

SQLite has no row locks (it serializes whole-database writes), so the test needs a real
PostgreSQL: ``DATABASE_URL=postgres://... pytest``.
"""

import threading
import time

import pytest
from django.db import connection, connections, transaction

from nr_llm.catalogue import import_catalogue
from nr_llm.models import McpServer, McpTool

from ..factories import McpServerFactory
from ..fakes import FakeClient, tool

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor == "sqlite", reason="row locks: PostgreSQL, MariaDB"),
]


def _waiting_on_locks() -> int:
    with connection.cursor() as cursor:
        if connection.vendor == "mysql":
            # Other sessions of this database still in a locking read: MariaDB waits for a
            # primary-key row lock while it plans the query, where INNODB_TRX does not list it.
            cursor.execute(
                "SELECT count(*) FROM information_schema.PROCESSLIST"
                " WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query'"
                " AND INFO LIKE '%%FOR UPDATE'"
            )
            return int(cursor.fetchone()[0])
        # Activity is snapshotted once per transaction; the poll runs inside one.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int(cursor.fetchone()[0])


def test_two_concurrent_imports_of_one_server_wait_for_each_other_and_end_consistent():
    """Both imports walk, then queue on the locked server row; both succeed, one row per tool."""
    server = McpServerFactory.create(identifier="demo")
    catalogue = [tool(f"t{i:03d}") for i in range(200)]
    reports = []
    errors: list[BaseException] = []

    def run():
        try:
            reports.append(
                import_catalogue(McpServer.objects.get(pk=server.pk), client=FakeClient(catalogue))
            )
        except Exception as exc:  # the test's reporting boundary: surfaced by the assert below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(2)]
    with transaction.atomic():
        # Hold the row lock ourselves so both imports are provably in reconcile at once.
        McpServer.objects.select_for_update().get(pk=server.pk)
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while _waiting_on_locks() < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        blocked = _waiting_on_locks()
    for thread in threads:
        thread.join(timeout=60)
    assert blocked == 2, "both imports should have been waiting for the server row"
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert sorted((r.ok, r.imported, r.orphaned) for r in reports) == [(True, 200, 0), (True, 200, 0)]
    assert McpTool.objects.filter(server=server).count() == 200
    assert McpTool.objects.filter(server=server, orphaned=True).count() == 0


def test_concurrent_imports_of_different_catalogues_leave_the_last_one_committed():
    """The later reconcile sees the earlier one's rows: its tools are live, the other's orphaned."""
    server = McpServerFactory.create(identifier="demo")
    barrier = threading.Barrier(2, timeout=30)
    errors: list[BaseException] = []

    class Meeting(FakeClient):
        def list_tools(self, endpoint, on_page=None):
            barrier.wait()  # both walks finish together, so both reconciles race for the row
            return super().list_tools(endpoint, on_page)

    def run(names):
        try:
            import_catalogue(McpServer.objects.get(pk=server.pk), client=Meeting([tool(n) for n in names]))
        except Exception as exc:  # surfaced by the assert below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(names,)) for names in (["a", "b"], ["b", "c"])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    live = set(McpTool.objects.filter(orphaned=False).values_list("remote_name", flat=True))
    orphaned = set(McpTool.objects.filter(orphaned=True).values_list("remote_name", flat=True))
    assert live in ({"a", "b"}, {"b", "c"})
    assert orphaned == {"a", "b", "c"} - live
    server.refresh_from_db()
    assert server.tool_count == 2
