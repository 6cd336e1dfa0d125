"""run_in_own_transaction: work committed apart from the caller's transaction, by a few kept writers."""

from __future__ import annotations

import functools
import threading
import time

import pytest
from django.db import DatabaseError, connection, transaction

from nr_llm import own_transaction
from nr_llm.models import McpServer
from nr_llm.own_transaction import (
    WRITERS,
    caller_blocks_own_transaction,
    close_writers,
    hand_over,
    relaxed,
    run_in_own_transaction,
    settle,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_work_commits_even_when_the_caller_rolls_back():
    """PostgreSQL: what the work wrote stays after the caller's rollback."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer: see the next test")
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


def _session() -> object:
    """The writer's database session: PostgreSQL's backend pid, else the DB-API connection."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]
    return connection.connection


def test_writes_start_no_thread_and_open_no_connection_each():
    """Fifty writes one after another: one writer thread, one database session for all of them
    (it was a new thread and a new connection per write)."""
    close_writers()
    run_in_own_transaction(lambda: None)
    threads_before = threading.active_count()
    sessions = [run_in_own_transaction(_session) for _ in range(50)]
    assert threading.active_count() == threads_before
    assert all(session is sessions[0] or session == sessions[0] for session in sessions)


def test_concurrent_writers_are_bounded():
    """Twenty threads writing at once are served by at most WRITERS writer threads."""
    close_writers()
    barrier = threading.Barrier(20)
    names: list[str] = []
    idents: set[int] = set()

    def write() -> None:
        barrier.wait(10)
        names.append(run_in_own_transaction(lambda: threading.current_thread().name, name="nr-llm-test"))
        idents.add(run_in_own_transaction(threading.get_ident))

    callers = [threading.Thread(target=write) for _ in range(20)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(30)
    assert len(names) == 20
    assert 1 <= len(idents) <= WRITERS
    assert set(names) == {"nr-llm-test"}  # a writer bears the work's name while it runs


def test_a_writer_whose_connection_died_reconnects_after_an_idle_spell(monkeypatch):
    """PostgreSQL ends the writer's session (a restart, an idle timeout): the next write after an
    idle spell finds the connection unusable, opens a new one, and commits."""
    if connection.vendor != "postgresql":
        pytest.skip("a session another connection can end is PostgreSQL's")
    monkeypatch.setattr(own_transaction, "IDLE_CHECK_SECONDS", 0.0)
    close_writers()  # one writer, so the next write is served by the one whose session ends
    first = run_in_own_transaction(_session)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [int(str(first))])
    time.sleep(0.1)
    second = run_in_own_transaction(_session)
    assert second != first
    run_in_own_transaction(lambda: McpServer.objects.create(identifier="after", name="After"))
    assert McpServer.objects.filter(identifier="after").exists()


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


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the caller's own connection is used on PostgreSQL only")


def _caller_session() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def test_relaxed_work_of_a_caller_in_no_transaction_runs_on_its_own_connection(monkeypatch):
    """Autocommit, no transaction open: the caller's session runs it, no writer is handed
    anything, and it is committed (another session sees it) when the call returns; on
    PostgreSQL and on SQLite alike."""
    handed: list[str] = []
    monkeypatch.setattr(own_transaction._writers, "submit", lambda work, name="": handed.append(name))
    caller = _session()
    ran_in = run_in_own_transaction(relaxed(_session))
    run_in_own_transaction(relaxed(lambda: McpServer.objects.create(identifier="here", name="Here")))
    assert ran_in == caller and handed == []
    monkeypatch.undo()
    assert run_in_own_transaction(lambda: McpServer.objects.filter(identifier="here").exists())


def test_relaxed_work_done_in_place_that_fails_keeps_nothing():
    """SQLite, in place as on a writer: the work is one transaction, a failure after its first
    write takes that write back, and the caller's connection is left in no transaction.
    (PostgreSQL's relaxed work is one autocommit statement, ``relaxed``.)"""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite runs relaxed work as a transaction")

    def fail() -> None:
        McpServer.objects.create(identifier="half", name="Half")
        raise LookupError("the work failed")

    with pytest.raises(LookupError):
        run_in_own_transaction(relaxed(fail))
    assert not connection.in_atomic_block
    assert not McpServer.objects.filter(identifier="half").exists()


def _create(identifier: str, name: str) -> McpServer:
    return McpServer.objects.create(identifier=identifier, name=name)


def test_relaxed_writes_in_place_from_many_threads_and_a_writers_job_all_land():
    """Callers on threads of their own write in place at once while a writer runs a job: each
    write lands, none refused (on SQLite they take turns in this process rather than meet on
    the database's lock, which a shared in-memory database refuses at once)."""
    names = [f"t{n}" for n in range(12)]
    failures: list[BaseException] = []
    start = threading.Barrier(len(names) + 1)

    def caller(name: str) -> None:
        try:
            start.wait(10)
            for round_ in range(5):
                run_in_own_transaction(relaxed(functools.partial(_create, f"{name}r{round_}", name)))
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=caller, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    start.wait(10)
    handed = hand_over(lambda: McpServer.objects.create(identifier="writer", name="Writer"))
    for thread in threads:
        thread.join(30)
    assert handed.result(10) is not None
    assert failures == []
    assert McpServer.objects.filter(name__startswith="t").count() == len(names) * 5


def test_a_relaxed_statement_leaves_the_callers_session_setting_alone():
    """The commit that does not wait for the disk is the statement's own: the caller's session
    still waits for it afterwards (``synchronous_commit`` as the site set it)."""
    _postgresql_only()

    def write() -> None:
        assert own_transaction.relaxed_clause()  # the statement asks for it
        McpServer.objects.create(identifier="relaxed", name="Relaxed")

    run_in_own_transaction(relaxed(write))
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    assert own_transaction.relaxed_clause() == ""  # outside the work, no statement asks


def test_relaxed_work_inside_the_callers_transaction_goes_to_a_writer():
    """The caller's rollback must not take it back: inside ``atomic`` it runs on a writer."""
    _postgresql_only()
    caller = _caller_session()
    with pytest.raises(RuntimeError), transaction.atomic():
        ran_in = run_in_own_transaction(relaxed(_session))
        run_in_own_transaction(relaxed(lambda: McpServer.objects.create(identifier="kept", name="Kept")))
        raise RuntimeError("the caller fails afterwards")
    assert ran_in != caller
    assert McpServer.objects.filter(identifier="kept").exists()


def test_a_callers_connection_that_died_hands_the_write_to_a_writer():
    """The server ended the caller's session (a restart, an idle timeout): the write is done by
    a writer instead, and the dead connection is dropped, so the caller's next query opens one."""
    _postgresql_only()
    dead = _caller_session()

    def terminate() -> None:  # from another session, as a restart or an idle timeout would
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [dead])

    run_in_own_transaction(terminate)
    time.sleep(0.1)
    ran_in = run_in_own_transaction(relaxed(_session))
    assert ran_in != dead
    assert _caller_session() not in (dead, ran_in)  # the caller reconnected on its own


def test_a_relaxed_statements_own_failure_is_raised_not_retried(monkeypatch):
    """A statement the database refuses on a healthy connection fails here; a writer would
    only meet the same refusal."""
    _postgresql_only()
    handed: list[str] = []
    monkeypatch.setattr(own_transaction._writers, "submit", lambda work, name="": handed.append(name))

    def refused() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT * FROM nr_llm_no_such_table")

    with pytest.raises(DatabaseError):
        run_in_own_transaction(relaxed(refused))
    assert handed == []
