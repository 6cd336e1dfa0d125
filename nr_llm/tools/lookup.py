"""The catalogue rows a tool call (or a turn) runs: one indexed query, its SQL built once per process.

``execute()`` reads its tool's row (and the server's) on every call. Through the ORM that read
costs more in compiling the query (``select_related``'s join: a select list of both models'
columns, rebuilt per call) and building the objects than the database takes to answer it,
which is what issue 26's "a ledger that costs almost nothing" measured. The statement is the
same every time but for the name, so it is written once per database (the columns of both
models, quoted by the backend) and its rows become models through the documented
``Model.from_db`` with each field's own database converters, exactly as the ORM would make
them. ``tests/tools/test_lookup.py`` holds it equal to the ORM's read.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Field, Model

from ..governance import statements
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
        name = statements.column(statements.field_of(McpTool, "tool_name"))
        # Ends in the column a caller matches: "= %s" for one name, "IN (...)" for a turn's.
        sql = (
            f"SELECT {', '.join(selected)} FROM {tool_table} INNER JOIN {server_table} "
            f"ON {tool_table}.{server_fk} = {server_table}.{server_pk} WHERE {tool_table}.{name}"
        )
        statement = _Statement(
            sql,
            _Columns.of(McpTool, McpTool._meta.db_table),
            _Columns.of(McpServer, McpServer._meta.db_table),
        )
        _statements[key] = statement  # the same for every thread: a race only builds it twice
    return statement


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


def _read(matching: str, names: list[str]) -> dict[str, McpTool]:
    statement = _statement()
    db = statements.database()
    with db.cursor() as cursor:
        cursor.execute(statement.sql + matching, names)
        rows = cursor.fetchall()
    split = len(statement.tool.attnames)
    found = {}
    for row in rows:
        tool: McpTool = statement.tool.build(list(row[:split]), db)
        server: McpServer = statement.server.build(list(row[split:]), db)
        tool.server = server  # the foreign key's cache: tool.server is not read again
        found[tool.tool_name] = tool
    return found
