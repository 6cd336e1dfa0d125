"""Fixtures shared by every test folder (registered here once, so a session fixture starts once)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.mcp.protocol.eras import process_cache
from nr_llm.mcp.wire.hostgate import ANSWERS
from nr_llm.mcp.wire.pool import process_pool
from tests.e2e.chromium import ALLOW_SKIP, INSTALL_COMMAND, SKIP_MARK
from tests.oauth_peers import oauth_peers
from tests.tls import tls

__all__ = ["oauth_peers", "tls"]

#: pytest-django's fixtures that open the test database; a test without one of them or the
#: ``django_db`` marker is refused any query, in every thread.
DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "live_server", "django_db_reset_sequences", "django_db_serialized_rollback"}
    | {"admin_user", "admin_client", "django_user_model", "django_username_field"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--database-only",
        action="store_true",
        help="run only the tests that reach the database: the run's database and driver change nothing else",
    )


def reaches_the_database(item: pytest.Item) -> bool:
    """pytest-django refuses a query to any test without its marker or a database fixture,
    so only these can depend on the vendor or the driver; marker ``database`` names the tests
    whose child processes use the run's database, which pytest-django cannot see."""
    if item.get_closest_marker("django_db") or item.get_closest_marker("database"):
        return True
    return not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("database_only"):
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        (kept if reaches_the_database(item) else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
def _writers_closed_before_the_database_goes(django_db_setup: None) -> Iterator[None]:
    """The writer threads and the tool-call pool's may keep their connections open: close them
    before the test database is dropped (PostgreSQL refuses to drop a database in use)."""
    yield
    from nr_llm.own_transaction import close_writers
    from nr_llm.tools.threads import close_pool

    close_pool()
    close_writers()


@pytest.fixture(autouse=True)
def _no_ledger_rows_of_earlier_tests(request: pytest.FixtureRequest) -> None:
    """On PostgreSQL and MariaDB/MySQL the tool-call ledger commits beside a test's own
    transaction (that is its point), so a test that does not flush would leave its rows to the
    next: delete them first."""
    if request.node.get_closest_marker("django_db") is None:
        return
    request.getfixturevalue("_writers_closed_before_the_database_goes")
    from django.db import connection

    if connection.vendor == "sqlite":
        return  # SQLite cannot write beside the test's transaction: nothing was committed
    from nr_llm.models import ToolCall
    from nr_llm.own_transaction import run_in_own_transaction

    with request.getfixturevalue("django_db_blocker").unblock():
        run_in_own_transaction(lambda: ToolCall.objects.all().delete())


@pytest.fixture(autouse=True)
def _forget_protocol_eras() -> Iterator[None]:
    """The process-wide era cache starts empty in each test: an OS-chosen port reused by a
    server of the other era must not inherit a verdict from an earlier test."""
    process_cache().clear()
    yield
    process_cache().clear()


@pytest.fixture(autouse=True)
def _close_idle_connections() -> Iterator[None]:
    """Each test starts with no idle connection and leaves none: a connection kept for a server
    a test stopped would be closed (or leak a ResourceWarning) in whichever test came next.
    Remembered host lookups go too: a test that changes what a name resolves to asks again."""
    process_pool().clear()
    ANSWERS.clear()
    yield
    process_pool().clear()
    ANSWERS.clear()


def _browser_skips(reporter: Any) -> list[str]:
    """The node ids of the browser tests skipped for want of Chromium."""
    found = []
    for report in reporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        if SKIP_MARK in str(reason):
            found.append(report.nodeid)
    return found


def pytest_unconfigure(config: pytest.Config) -> None:
    """After the run's last line, where it cannot be missed: the admin was not tested in a browser."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:  # -p no:terminal, or a run that never reached the reporter
        return
    if skipped := _browser_skips(reporter):
        reporter.write_line(
            f"BROWSER TESTS SKIPPED ({len(skipped)}, {ALLOW_SKIP}=1): {', '.join(skipped)}. "
            f"The admin was not tested in a browser; install Chromium with: {INSTALL_COMMAND}",
            red=True,
            bold=True,
        )
