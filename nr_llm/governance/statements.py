"""Statements of the tool-call path, each written once per database, run without the ORM's
per-call compiling.

A tool call writes its ledger row twice and stamps its server once; through the ORM each
write compiles its statement anew (every column's SQL, placeholders, the model's save
machinery), which on a small host costs more than the database's own work. These statements
are the same every time but for their values, so they are built once per database alias from
the model's meta (names quoted by the backend) and their values prepared by each field's own
``get_db_prep_save``, exactly as the ORM sends them. ``tests/governance/test_statements.py``
holds each equal to the ORM's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.models import Field, Model

from ..own_transaction import relaxed_clause

_Fields = tuple[Field[Any, Any], ...]
_built: dict[tuple[Any, ...], tuple[str, _Fields]] = {}


def column(field: Field[Any, Any]) -> str:
    """The field's quoted column name (a concrete field has one)."""
    assert field.column is not None, field
    return connection.ops.quote_name(field.column)


def field_of(model: type[Model], name: str) -> Field[Any, Any]:
    found = model._meta.get_field(name)
    assert isinstance(found, Field), name
    return found


def table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def database() -> BaseDatabaseWrapper:
    """This thread's connection itself: ``django.db.connection`` is a proxy that looks it up
    again on every attribute read, which the per-field preparation below would do dozens of
    times per statement."""
    return connections[DEFAULT_DB_ALIAS]


def cursor(db: BaseDatabaseWrapper) -> CursorWrapper:
    """``db.cursor()`` for these statements: on PostgreSQL, where the site allows prepared
    statements, one that binds its values on the server, so each statement is prepared once per
    connection instead of parsed and planned on every call.

    Parsing and planning are most of what these statements cost the database: planning an
    INSERT or UPDATE of the ledger opens each of its indexes, and the guard's join is planned
    anew every time; prepared, a call's two writes cost about 0.9 ms less on a small host
    (docs/operator-guide.md, "The ledger's cost"). Django binds on the client by default, which
    never prepares, and leaves prepared statements off (``prepare_threshold`` None) because a
    transaction-pooling PgBouncer without ``max_prepared_statements`` cannot keep them. So the
    site's own ``OPTIONS["prepare_threshold"]``, as psycopg reads it on the live connection,
    decides: None (Django's default) keeps Django's cursor; a number prepares these statements
    after that many uses, whatever the site chose for its own queries' binding. While Django
    logs queries (``DEBUG``, ``assertNumQueries``) its own cursor stays: its log reads the text
    a client-binding cursor sent, which a prepared statement's execution does not leave.
    """
    wrapper = db.cursor()
    if (
        db.vendor == "postgresql"
        and not db.queries_logged
        and getattr(db.connection, "prepare_threshold", None) is not None
    ):
        # Django's own class for server-side binding (psycopg's Cursor with Django's callproc),
        # inside the wrapper Django made: its execute wrappers see these statements as any other.
        from django.db.backends.postgresql.base import ServerBindingCursor

        binding: Any = ServerBindingCursor  # unstubbed
        wrapper.cursor.close()
        wrapper.cursor = binding(db.connection)
    return wrapper


@dataclass(frozen=True)
class Guard:
    """A condition an INSERT holds itself to (``insert``): ``sql`` (one boolean expression with
    placeholders) and its ``values``, both out of ``repr`` (the values may spell ciphertexts)."""

    sql: str = dataclasses.field(repr=False)
    values: Sequence[Any] = dataclasses.field(repr=False)


def insert(row: Model, guard: Guard | None = None) -> bool:
    """INSERT ``row`` with every concrete field, as ``save(force_insert=True)`` does but for the
    signals (the ledger's models have no receivers; their primary key is set in Python).

    ``guard``: the row is inserted only if it holds when the statement runs, in the same
    statement. Whether the row was inserted.
    """
    db = database()
    sql, values = _insert(db, row, guard)
    with cursor(db) as cursor_:
        cursor_.execute(sql, values)
        if guard is not None and cursor_.rowcount != 1:
            return False
    _inserted(row, db)
    return True


def _insert(db: BaseDatabaseWrapper, row: Model, guard: Guard | None) -> tuple[str, list[Any]]:
    """``insert``'s statement (ending in ``relaxed_clause()``) and its values."""
    model = type(row)
    key = ("insert", db.alias, model, guard.sql if guard else None)
    built = _built.get(key)
    if built is None:
        fields: _Fields = tuple(model._meta.concrete_fields)
        columns = ", ".join(column(field) for field in fields)
        if guard is None:
            sql = f"INSERT INTO {table(model)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})"
        else:
            selected = ", ".join(_typed(field, db) for field in fields)
            sql = f"INSERT INTO {table(model)} ({columns}) SELECT {selected} WHERE {guard.sql}"
        built = _built[key] = (sql, fields)
    sql, fields = built
    values = [field.get_db_prep_save(field.pre_save(row, True), db) for field in fields]
    return sql + relaxed_clause(), [*values, *guard.values] if guard else values


def _inserted(row: Model, db: BaseDatabaseWrapper) -> None:
    row._state.adding = False
    row._state.db = db.alias


def _typed(field: Field[Any, Any], db: BaseDatabaseWrapper) -> str:
    """A placeholder in a ``SELECT`` list: PostgreSQL reads an untyped value there as text (and
    NULL as text), so a column not of text gets an explicit cast to its type; a text value stays
    untyped, so the column's own length check applies as in ``VALUES``. SQLite takes values as
    they come (a cast there would change them)."""
    if db.vendor != "postgresql" or field.get_internal_type() in ("CharField", "TextField"):
        return "%s"
    return f"CAST(%s AS {field.db_type(db)})"


@dataclass(frozen=True)
class Update:
    """UPDATE the rows of ``model`` whose fields equal ``where``, setting ``changes`` (both keyed
    by field name). Like ``QuerySet.update()`` it leaves ``auto_now`` fields alone.

    ``skip_locked`` (PostgreSQL): a row another transaction holds is skipped, never waited for.
    It is one statement, so it may run in autocommit, where the ORM refuses ``FOR UPDATE``.
    """

    model: type[Model]
    changes: dict[str, Any]
    where: dict[str, Any]
    skip_locked: bool = False

    def sql(self) -> tuple[str, list[Any]]:
        db = database()
        key = (
            "update",
            db.alias,
            self.model,
            tuple(self.changes),
            tuple(self.where),
            self.skip_locked,
        )
        built = _built.get(key)
        if built is None:
            meta = self.model._meta
            assert meta.pk is not None
            pk, name = column(meta.pk), table(self.model)
            setting = [field_of(self.model, field) for field in self.changes]
            matching = [field_of(self.model, field) for field in self.where]
            assignments = ", ".join(f"{column(field)} = %s" for field in setting)
            matched = " AND ".join(f"{column(field)} = %s" for field in matching)
            if self.skip_locked:
                matched = f"{pk} IN (SELECT {pk} FROM {name} WHERE {matched} FOR UPDATE SKIP LOCKED)"
            fields: _Fields = (*setting, *matching)
            built = _built[key] = (f"UPDATE {name} SET {assignments} WHERE {matched}", fields)
        sql, fields = built
        values = [*self.changes.values(), *self.where.values()]
        return sql, [field.get_db_prep_save(value, db) for field, value in zip(fields, values, strict=True)]


def run(update: Update) -> int:
    """Run ``update``; the number of rows it changed."""
    sql, values = update.sql()
    with cursor(database()) as cursor_:
        cursor_.execute(sql + relaxed_clause(), values)
        return int(cursor_.rowcount)
