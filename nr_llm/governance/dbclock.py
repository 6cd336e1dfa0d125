"""Judge a row's age by the database server's clock, so a worker whose clock jumped ahead does
not delete or reap rows early."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models.functions import Now
from django.db.models.sql import Query


def database_now() -> datetime:
    """The database server's clock, in UTC, read as ``Now()`` writes it so it orders with those
    rows (plain CURRENT_TIMESTAMP has whole seconds on SQLite and MySQL)."""
    query = Query(None)
    sql, params = query.get_compiler(connection=connection).compile(Now().resolve_expression(query))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        value: Any = cursor.fetchone()[0]
    if isinstance(value, str):  # SQLite: "YYYY-MM-DD HH:MM:SS.SSS", in UTC
        value = datetime.fromisoformat(value)
    moment: datetime = value if value.tzinfo else value.replace(tzinfo=UTC)
    return moment


def not_ahead(now: datetime) -> datetime:
    """``now``, or the database's clock when ``now`` is ahead of it."""
    return min(now, database_now())
