"""What a process of its own shows about writes in their own transaction (tests/own_transaction_child.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

from nr_llm import own_transaction

ROOT = Path(__file__).resolve().parent.parent


def _child(path: Path, mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tests.own_transaction_child", str(path), mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.sqlite3"
    _child(path, "migrate")
    return path


def test_a_caller_whose_open_read_went_stale_still_writes_its_row_at_once(database):
    """SQLite in WAL mode: a read the caller left open (a loop over ``iterator()``) holds a
    snapshot another connection's commit made stale, so the caller's own connection cannot
    write; the row is written by the writer thread instead, at once, not refused after the
    ledger's wait for a lock."""
    out = _child(database, "stale-read")
    assert "written in 0." in out, out
    assert "rows read after it: 199" in out, out
    kept = sqlite3.connect(database).execute(
        "SELECT count(*) FROM nr_llm_toolcall WHERE tool_name = 'in-the-loop'"
    )
    assert kept.fetchone()[0] == 1


def test_a_process_that_exits_right_after_handing_over_a_write_still_gets_it_written(database):
    """A write handed over and not waited for (a health stamp) is not lost when the process
    ends right after it (a management command, a worker's last task): exit waits for it,
    within a short grace."""
    _child(database, "hand-over-and-exit")
    found = sqlite3.connect(database).execute("SELECT name FROM nr_llm_mcpserver WHERE identifier = 'handed'")
    assert found.fetchall() == [("Handed over",)]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX's")
def test_a_forked_child_does_not_inherit_the_sqlite_write_lock_held():
    """A thread holding the process's SQLite write lock when another forks: the child's lock is
    free (the holder does not exist there), or every write of the child would wait forever."""
    import os

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with own_transaction._sqlite_writes:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork() with threads running
            pid = os.fork()
        if pid == 0:  # the child: report and leave at once, running nothing of the parent's
            os._exit(0 if own_transaction._sqlite_writes.acquire(timeout=5) else 1)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        holder.join(10)
    assert os.waitstatus_to_exitcode(status) == 0
