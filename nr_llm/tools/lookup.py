"""The catalogue rows a tool call (or a turn) runs: one indexed query, its SQL built once per process.

``execute()`` reads its tool's row (and the server's) on every call, so an operator's change
reaches the very next call. Through the ORM that read costs more in compiling the query
(``select_related``'s join: a select list of both models' columns, rebuilt per call) than the
database takes to answer it: about 1.5 ms a call on a small host (``bench/turn.py``, the
issue 40 note). The statement is the same every time but for the name, so it is written once
per database (the columns of both models, quoted by the backend), sent through Django's cursor
(query log, execute wrappers, APM see it), and its rows become models through the documented
``Model.from_db`` with each field's own database converters, exactly as the ORM would make
them. ``tests/tools/test_lookup.py`` holds it equal to the ORM's read.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Field, Model

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
    def of(cls, model: type[Model]) -> _Columns:
        fields: list[Field[Any, Any]] = list(model._meta.concrete_fields)
        converters = []
        for position, field in enumerate(fields):
            column = field.get_col(model._meta.db_table)
            found = [*connection.ops.get_db_converters(column), *field.get_db_converters(connection)]
            if found:
                converters.append((position, column, tuple(found)))
        return cls(model, tuple(field.attname for field in fields), tuple(converters))

    def build(self, values: list[Any]) -> Any:
        for position, column, converters in self.converters:
            value = values[position]
            for converter in converters:
                value = converter(value, column, connection)
            values[position] = value
        return self.model.from_db(connection.alias, self.attnames, values)


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
        quote = connection.ops.quote_name
        tool, server = quote(McpTool._meta.db_table), quote(McpServer._meta.db_table)
        selected = [f"{tool}.{quote(str(f.column))}" for f in McpTool._meta.concrete_fields] + [
            f"{server}.{quote(str(f.column))}" for f in McpServer._meta.concrete_fields
        ]
        joined = f"{tool} INNER JOIN {server} ON {tool}.{quote('server_id')} = {server}.{quote('id')}"
        # Ends in the column a caller matches: "= %s" for one name, "IN (...)" for a turn's.
        sql = f"SELECT {', '.join(selected)} FROM {joined} WHERE {tool}.{quote('tool_name')}"
        statement = _Statement(sql, _Columns.of(McpTool), _Columns.of(McpServer))
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
    with connection.cursor() as cursor:
        cursor.execute(statement.sql + matching, names)
        rows = cursor.fetchall()
    split = len(statement.tool.attnames)
    found = {}
    for row in rows:
        tool: McpTool = statement.tool.build(list(row[:split]))
        tool.server = statement.server.build(list(row[split:]))  # the foreign key's cache
        found[tool.tool_name] = tool
    return found
