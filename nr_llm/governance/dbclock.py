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


def database_now() -> datetime:
    """The database server's clock, in UTC."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        value: Any = cursor.fetchone()[0]
    if isinstance(value, str):  # SQLite: "YYYY-MM-DD HH:MM:SS", in UTC
        value = datetime.fromisoformat(value)
    moment: datetime = value if value.tzinfo else value.replace(tzinfo=UTC)
    return moment


def not_ahead(now: datetime) -> datetime:
    """``now``, or the database's clock when ``now`` is ahead of it."""
    return min(now, database_now())
