"""run_in_own_transaction and the threads the package starts: work committed apart from the
caller's transaction, connections used as Django hands them out (CONN_MAX_AGE, health checks,
a connection found dead)."""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from nr_llm import own_transaction
from nr_llm.models import McpServer
from nr_llm.own_transaction import (
    WRITERS,
    caller_blocks_own_transaction,
    close_writers,
    hand_over,
    run_in_own_transaction,
    settle,
    writers,
)
from nr_llm.tools import threads

pytestmark = pytest.mark.django_db(transaction=True)


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("a session another connection can see or end is PostgreSQL's")


def _session() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _alive(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return bool(cursor.fetchone()[0])


def _gone(pid: int) -> bool:
    """The session ``pid`` ended (a closed client's backend leaves pg_stat_activity shortly after)."""
    deadline = time.monotonic() + 10
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_work_commits_even_when_the_caller_rolls_back():
    """PostgreSQL: what the work wrote stays after the caller's rollback."""
    _postgresql_only()
    with pytest.raises(RuntimeError), transaction.atomic():
        run_in_own_transaction(lambda: McpServer.objects.create(identifier="kept", name="Kept"))
        raise RuntimeError("the caller fails afterwards")
    assert McpServer.objects.filter(identifier="kept").exists()


def test_on_sqlite_a_caller_inside_a_transaction_is_told_before_trying():
    """The one case another connection cannot write beside the caller is named, not waited on."""
    assert caller_blocks_own_transaction() is False
    with transaction.atomic():
        assert caller_blocks_own_transaction() is (connection.vendor == "sqlite")


def test_the_works_exception_is_raised_in_the_caller_and_nothing_is_kept():
    """A failing work rolls its own transaction back and raises where it was called."""

    def fail() -> None:
        McpServer.objects.create(identifier="gone", name="Gone")
        raise LookupError("the work failed")

    with pytest.raises(LookupError, match="the work failed"):
        run_in_own_transaction(fail)
    assert not McpServer.objects.filter(identifier="gone").exists()


def test_a_caller_with_no_transaction_writes_in_place_durably(monkeypatch):
    """No transaction open: the work runs on the caller's own connection (its query log sees
    it), in a durable transaction of its own; no writer job, no thread."""
    monkeypatch.setattr(own_transaction._writers, "submit", lambda *args, **kwargs: pytest.fail("handed"))
    seen: list[bool] = []

    def work() -> None:
        seen.append(connection.in_atomic_block)
        McpServer.objects.create(identifier="here", name="Here")

    run_in_own_transaction(work)
    assert seen == [True]
    assert McpServer.objects.filter(identifier="here").exists()
    with pytest.raises(RuntimeError), transaction.atomic(durable=True):
        raise RuntimeError("durable blocks nest nowhere: the work's was its own")


def test_writes_inside_the_callers_transaction_are_bounded_to_a_few_writers():
    """Twenty callers, each inside a transaction, writing at once: at most WRITERS writer
    threads serve them all, each bearing the work's name while it runs."""
    _postgresql_only()
    close_writers()
    barrier = threading.Barrier(20)
    names: list[str] = []
    idents: set[int] = set()

    def write() -> None:
        try:
            with transaction.atomic():
                barrier.wait(10)
                names.append(
                    run_in_own_transaction(lambda: threading.current_thread().name, name="nr-llm-test")
                )
                idents.add(run_in_own_transaction(threading.get_ident))
        finally:
            connection.close()

    callers = [threading.Thread(target=write) for _ in range(20)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(30)
    assert len(names) == 20
    assert 1 <= len(idents) <= WRITERS
    assert set(names) == {"nr-llm-test"}


def _in_a_writer(work: Any) -> Any:
    """``work`` run by a writer: the caller holds a transaction, so it is handed over."""
    with transaction.atomic():
        return run_in_own_transaction(work)


def test_writers_give_their_connection_back_between_jobs_with_conn_max_age_0(monkeypatch):
    """Django's default CONN_MAX_AGE = 0 (and always with its connection pool): the writer's
    session ends with its job; the next job opens one anew."""
    _postgresql_only()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    close_writers()
    first = _in_a_writer(_session)
    assert settle(10)
    assert writers().connected() == 0
    assert _gone(first)
    second = _in_a_writer(_session)
    assert second != first


def test_a_writer_whose_connection_was_killed_reconnects_once_and_writes(monkeypatch, caplog):
    """Persistent connections (CONN_MAX_AGE None): the database ends the writer's session (a
    restart, a failover); the next write finds it dead, logs it, and commits on a fresh one."""
    _postgresql_only()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    close_writers()
    first = _in_a_writer(_session)
    assert writers().connected() == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    for _ in range(100):
        if not _alive(first):
            break
        time.sleep(0.05)
    with caplog.at_level(logging.WARNING, "nr_llm.ledger"):
        second = _in_a_writer(
            lambda: (McpServer.objects.create(identifier="after", name="After"), _session())[1]
        )
    assert second != first
    assert McpServer.objects.filter(identifier="after").exists()
    assert "found dead" in caplog.text
    close_writers()


def test_with_health_checks_a_killed_writer_connection_is_replaced_before_the_write(monkeypatch, caplog):
    """CONN_HEALTH_CHECKS on: the writer's next job checks its connection first (Django's own
    check) and opens a fresh one, so the write never meets the dead one (nothing to run again)."""
    _postgresql_only()
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", None)
    monkeypatch.setitem(connection.settings_dict, "CONN_HEALTH_CHECKS", True)
    close_writers()
    first = _in_a_writer(_session)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    for _ in range(100):
        if not _alive(first):
            break
        time.sleep(0.05)
    with caplog.at_level(logging.WARNING, "nr_llm.ledger"):
        second = _in_a_writer(_session)
    assert second != first
    assert "found dead" not in caplog.text
    close_writers()


def test_a_writers_own_failure_is_raised_not_run_again(monkeypatch):
    """A statement the database refuses on a live connection (not a dead one) is raised once:
    a fresh connection would meet the same refusal."""
    runs: list[int] = []

    def refused() -> None:
        runs.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM nr_llm_no_such_table")

    with pytest.raises(DatabaseError):
        run_in_own_transaction(refused)
    assert runs == [1]


def test_a_pool_thread_idle_past_conn_max_age_lets_its_connection_go(monkeypatch):
    """CONN_MAX_AGE 1 s: a tool-call pool thread keeps its connection after a call, and lets it
    go once idle past the age, without any further work (its session ends on the server)."""
    _postgresql_only()  # the tests' in-memory SQLite is never closed (Django keeps it open)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 1)
    threads.close_pool()
    pid = threads.submit(_session).result(10)
    pool = threads.pool()
    assert pool.connected() == 1
    deadline = time.monotonic() + 15
    while pool.connected() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pool.connected() == 0
    assert _gone(pid)
    threads.close_pool()


def test_hand_over_does_not_wait_and_settle_does():
    """A handed-over write returns at once; settle() waits for it to be committed."""
    gate = threading.Event()

    def slow_write() -> None:
        gate.wait(5)
        McpServer.objects.create(identifier="later", name="Later")

    done = hand_over(slow_write)
    assert not done.done()
    gate.set()
    assert settle(10)
    assert done.exception() is None and McpServer.objects.filter(identifier="later").exists()


def test_writes_in_place_from_many_threads_and_a_writers_job_all_land():
    """Threads writing in place at once, and a writer's job beside them: every row committed
    (on SQLite they meet on the process's one write lock, never on the database's)."""

    def create(identifier: str) -> None:
        McpServer.objects.create(identifier=identifier, name=identifier)

    def caller(name: str) -> None:
        try:
            for round_ in range(5):
                run_in_own_transaction(functools.partial(create, f"{name}r{round_}"))
        finally:
            connection.close()

    callers = [threading.Thread(target=caller, args=(f"t{n}",)) for n in range(4)]
    for each in callers:
        each.start()
    handed = hand_over(functools.partial(create, "writer"))
    for each in callers:
        each.join(30)
    handed.result(10)
    assert McpServer.objects.count() == 21


def test_a_deadlock_victim_is_named_on_every_driver() -> None:
    """MySQLdb's error number 1213, psycopg 3's sqlstate and psycopg2's pgcode 40P01 are a
    deadlock the database rolled back (the ledger runs such a transaction again); others are not."""
    from django.db import OperationalError

    from nr_llm.own_transaction import deadlocked

    def wrapped(cause: Exception) -> OperationalError:
        error = OperationalError("wrapped by Django")
        error.__cause__ = cause
        return error

    psycopg3, psycopg2 = Exception("deadlock detected"), Exception("deadlock detected")
    psycopg3.sqlstate = "40P01"  # type: ignore[attr-defined]
    psycopg2.pgcode = "40P01"  # type: ignore[attr-defined]
    assert deadlocked(wrapped(Exception(1213, "Deadlock found when trying to get lock")))
    assert deadlocked(wrapped(psycopg3)) and deadlocked(wrapped(psycopg2))
    assert not deadlocked(wrapped(Exception(1205, "Lock wait timeout exceeded")))
    assert not deadlocked(OperationalError("no cause"))
