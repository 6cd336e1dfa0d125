"""Each CI job runs on the database and driver it says it does (.ci/run sets
``NR_LLM_EXPECT_DATABASE``): a psycopg2 job that quietly ran on psycopg 3, or a MariaDB job on
SQLite, would prove nothing."""

import os

import pytest
from django.db import connection

EXPECTED = os.environ.get("NR_LLM_EXPECT_DATABASE", "")


@pytest.mark.skipif(not EXPECTED, reason="NR_LLM_EXPECT_DATABASE is unset (CI sets it per job)")
@pytest.mark.django_db
def test_the_run_is_on_the_database_and_driver_ci_names():
    """``vendor/driver``, e.g. ``postgresql/psycopg2``, ``postgresql/psycopg``, ``mysql/MySQLdb``,
    ``sqlite/sqlite3``: Django's vendor and the package of the driver whose connection it holds."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    driver = type(connection.connection).__module__.split(".")[0]
    assert f"{connection.vendor}/{driver}" == EXPECTED
