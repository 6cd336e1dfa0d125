"""A database nr_llm cannot keep its ledger on fails ``manage.py check`` (E060, E061), naming
it; every database the suite runs on passes. Never a failure at a tool call."""

import os
import subprocess
import sys
from pathlib import Path

import django
import pytest
from django.core.management import call_command
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def _check(tmp_path: Path, case: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DEBUG": "true",
        "NR_LLM_TEST_DATABASE": case,
        "DJANGO_SETTINGS_MODULE": "tests.backends.settings",
    }
    if case not in ("myisam", "mysql_local_time"):
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'site.sqlite3'}"
    env.pop("ENV_FILE", None)
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_vendor_nr_llm_has_never_run_on_fails_manage_py_check(tmp_path):
    """A third-party backend of another vendor: `manage.py check` exits non-zero with E060,
    naming the alias, the engine and the database's name, without touching the database."""
    result = _check(tmp_path, "unknown_vendor")
    assert result.returncode != 0, result.stderr
    assert "nr_llm.E060" in result.stderr
    assert "'default' (tests.backends.unknown_vendor, Acme DB)" in result.stderr
    if django.VERSION < (6,):
        # Django 6's own model checks run against every database (a JSONField's asks SQLite
        # whether it has JSON): only before 6 does nothing connect.
        assert not (tmp_path / "site.sqlite3").exists()


def test_a_database_without_transactions_fails_manage_py_check_database(tmp_path):
    """A backend without transactions: `manage.py check --database default` (as `migrate`
    runs it) exits non-zero with E061, saying what it lacks."""
    result = _check(tmp_path, "no_transactions", "--database", "default")
    assert result.returncode != 0, result.stderr
    assert "nr_llm.E061" in result.stderr
    assert "SQLite without transactions" in result.stderr and "it lacks transactions" in result.stderr


def test_a_database_without_skip_locked_fails_manage_py_check_database(tmp_path):
    """Row locks without SKIP LOCKED (MariaDB before 10.6): E061 names what is missing."""
    result = _check(tmp_path, "no_skip_locked", "--database", "default")
    assert result.returncode != 0, result.stderr
    assert "nr_llm.E061" in result.stderr and "it lacks SELECT ... FOR UPDATE SKIP LOCKED" in result.stderr


def test_migrate_refuses_a_database_without_transactions(tmp_path):
    """`migrate` runs the database checks first: nothing is created on such a database."""
    env = {
        **os.environ,
        "DEBUG": "true",
        "NR_LLM_TEST_DATABASE": "no_transactions",
        "DJANGO_SETTINGS_MODULE": "tests.backends.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'site.sqlite3'}",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "migrate"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "nr_llm.E061" in result.stderr


@pytest.mark.skipif("connection.vendor != 'mysql'", reason="MyISAM is a MySQL/MariaDB storage engine")
@pytest.mark.database
def test_mariadb_with_myisam_as_its_storage_engine_fails_manage_py_check_database(tmp_path):
    """The real server, its session's default storage engine MyISAM (no transactions):
    E061 names it."""
    result = _check(tmp_path, "myisam", "--database", "default")
    assert result.returncode != 0, result.stderr
    assert "nr_llm.E061" in result.stderr and "it lacks transactions" in result.stderr


@pytest.mark.skipif("connection.vendor != 'mysql'", reason="session time zones are MySQL/MariaDB's")
@pytest.mark.database
def test_mariadb_answering_now_in_local_time_fails_manage_py_check_database(tmp_path):
    """A session time zone other than UTC makes ``Now()`` local time while Django stores UTC, so
    expiry and the reaper would be hours off: E062 names the offset and the fix."""
    result = _check(tmp_path, "mysql_local_time", "--database", "default")
    assert result.returncode != 0, result.stderr
    assert "nr_llm.E062" in result.stderr and "18000 seconds from UTC" in result.stderr


@pytest.mark.django_db
def test_the_database_of_this_run_passes_every_check():
    """The suite's own database (SQLite, PostgreSQL on either driver, MariaDB): no E060, no
    E061, with the database checks run as `migrate` runs them."""
    call_command("check", "--tag", "nr_llm", "--database", connection.alias)
