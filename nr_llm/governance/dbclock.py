"""The database server's clock, against a worker's clock that is off or jumps forward.

Retention and the reaper act on age: a worker whose clock jumped a year ahead would find
every row a year older than it is and delete or reap it. Retention counts from the earlier of
the worker's clock and the database server's (another machine, as a rule; on SQLite, this
host's); the reaper and approval expiry (``decisions.approval_now``) from the database's alone.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection
from django.db.models.functions import Now
from django.db.models.sql import Query


def database_now() -> datetime:
    """The database server's clock, in UTC.

    Read as Django's ``Now()`` is written, so a moment read here orders with the rows written with
    ``Now()``: SQLite's and MySQL's plain CURRENT_TIMESTAMP have whole seconds only, which left two
    calls held in the same second in no order."""
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
