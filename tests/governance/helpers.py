"""Rows and a clock for the governance tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth.models import Permission, User
from django.db import connection

from nr_llm.models import DataClass, McpTool, ToolCall
from tests.factories import McpServerFactory, McpToolFactory

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


class FakeClock:
    """A wall clock a test moves by hand: expiry arithmetic without sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def guarded_tool(*, requires_approval: bool = True, **server: Any) -> McpTool:
    """An enabled tool ``mcp_guarded_echo`` of a server that (by default) requires approval."""
    row = McpServerFactory.create(
        identifier=server.pop("identifier", "guarded"),
        name=server.pop("name", "Guarded server"),
        data_class=server.pop("data_class", DataClass.EDITOR_CONTENT),
        requires_approval=requires_approval,
        **server,
    )
    return McpToolFactory.create(
        server=row, remote_name="echo", enabled=True, input_schema=SCHEMA, description="Echo the text."
    )


def row_of(result: Any) -> ToolCall:
    """The ledger row of an ``execute``/``resume`` result (which must have one)."""
    assert result.call_id is not None, result
    return ToolCall.objects.get(pk=result.call_id)


def approver(username: str = "approver", *, allowed: bool = True) -> User:
    """An active user holding (or not) nr_llm.approve_toolcall."""
    user = User.objects.create_user(username, password="pw", is_staff=True)
    if allowed:
        user.user_permissions.add(Permission.objects.get(codename="approve_toolcall"))
    # A fresh instance: the permission cache of the old one predates the grant.
    return User.objects.get(pk=user.pk)


def count_ledger_queries(monkeypatch: Any) -> list[str]:
    """The SQL the ledger sends on its own connection from now on (the list fills as it runs)."""
    from django.test.utils import CaptureQueriesContext

    from nr_llm import own_transaction
    from nr_llm.governance import ledger

    counted: list[str] = []
    real = own_transaction.run_in_own_transaction

    def counting(work: Any, **options: Any) -> Any:
        def measured() -> Any:
            with CaptureQueriesContext(connection) as queries:
                value = work()
            counted.extend(query["sql"] for query in queries.captured_queries)
            return value

        return real(measured, **options)

    monkeypatch.setattr(ledger, "run_in_own_transaction", counting)
    return counted
