"""The catalogue rows a tool call (or a turn) runs: one indexed query, its SQL built once per process.

``execute()`` reads its tool's row (and the server's) on every call. Through the ORM that read
costs more in compiling the query (``select_related``'s join: a select list of both models'
columns, rebuilt per call) and building the objects than the database takes to answer it,
which is what issue 26's "a ledger that costs almost nothing" measured. The statement is the
same every time but for the name, so it is written once per database (the columns of both
models, quoted by the backend) and its rows become models through the documented
``Model.from_db`` with each field's own database converters, exactly as the ORM would make
them. ``tests/tools/test_lookup.py`` holds it equal to the ORM's read.

The rows read are also remembered (``remembered``), so that a later call may skip the read: it
prepares from the remembered row, and its ledger row is written with a ``Guard`` in the same
statement, which inserts it only if the catalogue still holds that row exactly (every column a
call uses, compared by the database as it inserts). When the guard finds a difference, nothing
was written and nothing sent: the call reads the row anew and starts again. So an operator's
change reaches the next call as surely as a read would, and a call costs one round trip before
it is sent instead of two. A fingerprint (one of the tool's row, one of its server's) is the
database's own spelling of the columns (PostgreSQL: a SHA-256 of the row's text; SQLite: a JSON
array of them), so both sides see the values alike; on other databases nothing is remembered
and every call reads its row.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

from ..governance import statements
from ..governance.statements import Guard
from ..models import McpServer, McpTool

_Converter = Any  # (value, expression, connection) -> value, as Django's converters are


@dataclass(frozen=True)
class _Columns:
    """One model's part of the statement: its columns' attribute names and converters."""

    model: type[Model]
    attnames: tuple[str, ...]
    #: (position in the model's part, the column expression, its converters)
    converters: tuple[tuple[int, Any, tuple[_Converter, ...]], ...]

    @classmethod
    def of(cls, model: type[Model], alias: str) -> _Columns:
        fields: list[Field[Any, Any]] = list(model._meta.concrete_fields)
        converters = []
        for position, field in enumerate(fields):
            column = field.get_col(alias)
            found = [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)]
            if found:
                converters.append((position, column, tuple(found)))
        return cls(model, tuple(field.attname for field in fields), tuple(converters))

    def build(self, values: list[Any], db: BaseDatabaseWrapper) -> Any:
        for position, column, converters in self.converters:
            value = values[position]
            for converter in converters:
                value = converter(value, column, db)
            values[position] = value
        return self.model.from_db(db.alias, self.attnames, values)


@dataclass(frozen=True)
class _Statement:
    sql: str
    tool: _Columns
    server: _Columns
    #: The guard's condition, when the statement's last two columns are the tool's fingerprint
    #: and its server's.
    guard: str | None


_statements: dict[tuple[str, str], _Statement] = {}


def _statement() -> _Statement:
    key = (connection.alias, connection.vendor)
    statement = _statements.get(key)
    if statement is None:
        tools, servers = McpTool._meta, McpServer._meta
        tool_table, server_table = statements.table(McpTool), statements.table(McpServer)
        selected = [f"{tool_table}.{statements.column(field)}" for field in tools.concrete_fields] + [
            f"{server_table}.{statements.column(field)}" for field in servers.concrete_fields
        ]
        server_fk = statements.column(statements.field_of(McpTool, "server"))
        server_pk = statements.column(statements.field_of(McpServer, "id"))
        tool_pk = statements.column(statements.field_of(McpTool, "id"))
        name = statements.column(statements.field_of(McpTool, "tool_name"))
        joined = (
            f"{tool_table} INNER JOIN {server_table} ON {tool_table}.{server_fk} = {server_table}.{server_pk}"
        )
        tool_print, server_print = _fingerprint(McpTool, tool_table), _fingerprint(McpServer, server_table)
        guard = None
        if tool_print is not None and server_print is not None:
            selected += [tool_print, server_print]
            # Each row by its key on its own, not the join the read makes: the same columns
            # compared, and a statement PostgreSQL plans without weighing join orders (planning
            # is most of what an unprepared INSERT costs it; statements.cursor).
            guard = (
                f"(SELECT {tool_print} FROM {tool_table} WHERE {tool_table}.{tool_pk} = %s) = %s "
                f"AND (SELECT {server_print} FROM {server_table} WHERE {server_table}.{server_pk} = %s) = %s"
            )
        # Ends in the column a caller matches: "= %s" for one name, "IN (...)" for a turn's.
        sql = f"SELECT {', '.join(selected)} FROM {joined} WHERE {tool_table}.{name}"
        statement = _Statement(
            sql,
            _Columns.of(McpTool, McpTool._meta.db_table),
            _Columns.of(McpServer, McpServer._meta.db_table),
            guard,
        )
        _statements[key] = statement  # the same for every thread: a race only builds it twice
    return statement


def _fingerprint(model: type[McpTool] | type[McpServer], table: str) -> str | None:
    """An expression of every guarded column of a ``model`` row that differs when any of them
    does, computed by the database (at the read and in the guard, so both see the values
    alike); None where none is known."""
    columns = [f"{table}.{statements.column(field)}" for field in _guarded(model)]
    if connection.vendor == "postgresql":
        # A row's text form tells NULL from "" and spells jsonb one way. SHA-256, not md5: a
        # server in FIPS mode refuses md5, and this runs in every catalogue read.
        return f"encode(sha256(convert_to(ROW({', '.join(columns)})::text, 'UTF8')), 'hex')"
    if connection.vendor == "sqlite":
        return f"json_array({', '.join(columns)})"
    return None


def tool_by_name(name: str) -> McpTool | None:
    """The enabled-or-not catalogue row named ``name`` with its server attached (no second
    query to reach it), or None; the same objects ``McpTool.objects.select_related("server")``
    would give."""
    return _read(" = %s", [name]).get(name)


def tools_by_names(names: Collection[str]) -> dict[str, McpTool]:
    """``tool_by_name`` for the names of a model's turn, in one query: the rows found, by name."""
    if not names:
        return {}
    return _read(f" IN ({', '.join(['%s'] * len(names))})", list(names))


class _Fingerprint(str):
    """The database's fingerprint of a row, out of every ``repr`` (an error report's locals): on
    SQLite it spells the columns themselves, the credentials' ciphertexts among them."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<catalogue row fingerprint>"


#: How many rows a process remembers (the most recently read; a site's busy tools).
REMEMBERED = 256
#: Columns a tool call never reads: bookkeeping that changes on its own (the health stamp on
#: every call, an import's progress), so a guard comparing them would fail for no reason.
#: Every other column is compared, a column added later included.
_UNGUARDED = {
    McpTool: {"created", "updated", "orphaned_at", "disabled_at", "raw_definition", "pinned_definition"},
    McpServer: {
        "created",
        "updated",
        "import_status",
        "import_error",
        "last_imported",
        "tool_count",
        "last_contact",
        "last_latency_ms",
        "import_task_state",
        "import_task_since",
        "import_task_token",
    },
}
_remembered: OrderedDict[tuple[str, str], tuple[McpTool, Guard]] = OrderedDict()
_remembering = threading.Lock()


def remembered(name: str) -> tuple[McpTool, Guard] | None:
    """A copy of the row last read for ``name`` and the guard its use needs, or None."""
    with _remembering:
        found = _remembered.get((connection.alias, name))
        if found is None:
            return None
        _remembered.move_to_end((connection.alias, name))
    tool, guard = found
    return _copied(tool), guard


def forget(name: str) -> None:
    """Drop what is remembered of ``name`` (a guard found it changed)."""
    with _remembering:
        _remembered.pop((connection.alias, name), None)


def forget_all() -> None:
    with _remembering:
        _remembered.clear()


def _copied(tool: McpTool) -> McpTool:
    """A copy of ``tool`` and its server: a caller may set attributes on it, never on the one kept."""
    server = copy.copy(tool.server)
    tool = copy.copy(tool)
    tool.server = server
    return tool


def _remember(tool: McpTool, guard: Guard) -> None:
    key = (connection.alias, tool.tool_name)
    with _remembering:
        _remembered[key] = (_copied(tool), guard)
        _remembered.move_to_end(key)
        while len(_remembered) > REMEMBERED:
            _remembered.popitem(last=False)


def _guarded(model: type[Model]) -> list[Field[Any, Any]]:
    return [field for field in model._meta.concrete_fields if field.name not in _UNGUARDED[model]]


def _read(matching: str, names: list[str]) -> dict[str, McpTool]:
    statement = _statement()
    db = statements.database()
    with statements.cursor(db) as cursor:
        cursor.execute(statement.sql + matching, names)
        rows = cursor.fetchall()
    split = len(statement.tool.attnames)
    end = split + len(statement.server.attnames)
    found = {}
    for row in rows:
        tool: McpTool = statement.tool.build(list(row[:split]), db)
        server: McpServer = statement.server.build(list(row[split:end]), db)
        tool.server = server  # the foreign key's cache: tool.server is not read again
        found[tool.tool_name] = tool
        if statement.guard is not None:
            prints = [_Fingerprint(row[end]), _Fingerprint(row[end + 1])]
            _remember(tool, Guard(statement.guard, [tool.pk, prints[0], server.pk, prints[1]]))
    return found
