"""nr_llm's one migration: the models agree with it, a database the 18 pre-release migrations
took to 0018 continues from it, and one they left part-way fails ``migrate`` with E072."""

import importlib
import os
import sqlite3
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from nr_llm.checks import check_migrated_part_way

ROOT = Path(__file__).resolve().parent.parent
SQUASH = "0001_squashed_0018_call_task_state"
REPLACED = importlib.import_module(f"nr_llm.migrations.{SQUASH}").Migration.replaces


@pytest.mark.django_db
def test_models_and_migrations_agree():
    """Every model change ships with its migration."""
    out = StringIO()
    call_command("makemigrations", "nr_llm", "--check", "--dry-run", stdout=out)


def test_the_squash_replaces_the_whole_pre_release_chain():
    """The 18 names the old chain recorded, in order, and nothing of them left on disk."""
    assert [name for _, name in REPLACED][::17] == ["0001_initial", "0018_call_task_state"]
    assert len(REPLACED) == 18 and {app for app, _ in REPLACED} == {"nr_llm"}
    assert [path.name for path in (ROOT / "nr_llm" / "migrations").glob("0*.py")] == [f"{SQUASH}.py"]


def _record_only(names: list[str]) -> MigrationRecorder:
    """django_migrations holding these nr_llm rows and no others (the schema stays the squash's)."""
    recorder = MigrationRecorder(connection)
    recorder.migration_qs.filter(app="nr_llm").delete()
    for name in names:
        recorder.record_applied("nr_llm", name)
    return recorder


@pytest.mark.django_db
def test_a_database_the_old_chain_took_to_0018_migrates_as_a_no_op():
    """The 18 rows the old chain wrote, none of the squash's: `migrate` (its checks included)
    applies nothing, passes E072 and records the squash as applied."""
    recorder = _record_only([name for _, name in REPLACED])
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert check_migrated_part_way(databases=[connection.alias]) == []
    out = StringIO()
    call_command("migrate", "nr_llm", skip_checks=False, stdout=out)
    assert "No migrations to apply." in out.getvalue()
    assert ("nr_llm", SQUASH) in recorder.applied_migrations()


@pytest.mark.django_db
def test_a_database_the_old_chain_left_part_way_fails_migrate_with_e072():
    """Rows up to 0012 only: Django would drop the squash from the plan and report success;
    the check refuses first, naming the last migration applied and both ways out."""
    recorder = _record_only([name for _, name in REPLACED[:12]])
    with pytest.raises(SystemCheckError) as raised:
        call_command("migrate", skip_checks=False, stdout=StringIO())
    text = str(raised.value)
    assert "nr_llm.E072" in text and "(last: 0012_server_watch)" in text
    assert "Migrate it to 0018_call_task_state" in text and "manage.py migrate nr_llm" in text
    assert {name for app, name in recorder.applied_migrations() if app == "nr_llm"} == {
        name for _, name in REPLACED[:12]
    }


@pytest.mark.django_db
def test_a_fresh_database_passes_e072():
    """The squash applied as usual (this run's own database): no error."""
    assert ("nr_llm", SQUASH) in MigrationRecorder(connection).applied_migrations()
    assert check_migrated_part_way(databases=[connection.alias]) == []


def _manage(database: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env.pop("ENV_FILE", None)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_manage_py_migrate_on_a_part_way_database_exits_non_zero_saying_what_to_do(tmp_path):
    """What the operator sees: `manage.py migrate` exits 1 with E072 and its hint, no traceback."""
    database = tmp_path / "site.sqlite3"
    assert _manage(database, "migrate", "-v", "0").returncode == 0
    with sqlite3.connect(database) as db:
        db.executemany(
            "DELETE FROM django_migrations WHERE app = 'nr_llm' AND name = ?",
            [(SQUASH,), *((name,) for _, name in REPLACED[12:])],
        )
    db.close()
    result = _manage(database, "migrate")
    assert result.returncode == 1, result.stdout
    assert "nr_llm.E072" in result.stderr and "(last: 0012_server_watch)" in result.stderr
    assert "HINT: Migrate it to 0018_call_task_state" in result.stderr
    assert "Traceback" not in result.stderr
