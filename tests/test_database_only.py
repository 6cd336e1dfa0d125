"""``--database-only`` (tests/conftest.py) keeps exactly the tests that can reach the database:
the database jobs of CI run only these, so a test it dropped by mistake would go untested on
PostgreSQL and MariaDB."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _collected(*args: str) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return {line for line in result.stdout.splitlines() if "::" in line}


def _names(tests: set[str], file: str) -> set[str]:
    return {test.split("::", 1)[1] for test in tests if test.startswith(f"{file}::")}


def test_database_only_keeps_the_marked_the_fixtured_and_the_child_process_tests():
    driver, middleware, checks = (
        "tests/test_database_driver.py",  # marker django_db
        "tests/observability/test_middleware.py",  # fixture db without the marker, and neither
        "tests/test_database_checks.py",  # marker database on two tests, django_db on one
    )
    ceiling, deadline = (
        "tests/governance/test_ceiling.py",  # some tests with the marker, some with neither
        "tests/mcp/wire/test_deadline.py",  # neither: arithmetic only
    )
    files = (driver, middleware, checks, ceiling, deadline)
    everything = _collected(*files)
    kept = _collected("--database-only", *files)

    assert _names(kept, driver) == _names(everything, driver) != set()
    assert "test_unrelated_connection_reset_stays_a_server_error" in _names(kept, middleware)
    assert "test_check_fails_when_the_middleware_is_not_last" not in _names(kept, middleware)
    assert {
        "test_the_database_of_this_run_passes_every_check",
        "test_mariadb_with_myisam_as_its_storage_engine_fails_manage_py_check_database",
        "test_mariadb_answering_now_in_local_time_fails_manage_py_check_database",
    } == _names(kept, checks)
    assert _names(kept, ceiling)
    assert "test_the_six_data_classes_are_ordered_least_to_most_sensitive" not in _names(kept, ceiling)
    assert _names(everything, deadline) and not _names(kept, deadline)
