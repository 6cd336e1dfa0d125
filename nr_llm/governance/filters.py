"""The Tool calls and Approvals filters: fixed choices or small tables, never the ledger.

Django's ``AllValuesFieldListFilter`` runs ``SELECT DISTINCT`` over the whole ledger on every
page; its date hierarchy does the same for years, months and days. Here a server comes from
the servers table, a tool from the chosen server's catalogue, a time from a fixed list, and
each choice filters on an indexed column (models.py), newest first.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from .models import PENDING, ToolCall, ToolCallStatus

#: The value that picks calls of local tools (no server); no server identifier can be it.
LOCAL = "-"
#: Choices at most in the server and tool lists: the rest are reached by search or URL.
CHOICES_SHOWN = 50
SINCE = {"1h": ("Last hour", timedelta(hours=1)), "24h": ("Last 24 hours", timedelta(days=1))} | {
    "7d": ("Last 7 days", timedelta(days=7)),
    "30d": ("Last 30 days", timedelta(days=30)),
}
ALL = "all"


class SinceFilter(admin.SimpleListFilter):
    title = "when"
    parameter_name = "since"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, label) for key, (label, _) in SINCE.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
        chosen = SINCE.get(self.value() or "")
        return queryset if chosen is None else queryset.filter(created__gte=timezone.now() - chosen[1])


class ServerFilter(admin.SimpleListFilter):
    """By server identifier (the name copied into the row: a deleted server's calls still match)."""

    title = "server"
    parameter_name = "server_identifier"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        from ..models import McpServer  # the server models import the governance package

        servers = McpServer.objects.order_by("identifier").values_list("identifier", flat=True)
        shown = list(servers[:CHOICES_SHOWN])
        value = self.value()
        if value and value != LOCAL and value not in shown:
            shown.append(value)  # a deleted server's calls, reached by a link
        return [*((identifier, identifier) for identifier in shown), (LOCAL, "local tools")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
        value = self.value()
        if value is None:
            return queryset
        return queryset.filter(server_identifier="" if value == LOCAL else value)


class ToolFilter(admin.SimpleListFilter):
    """By tool: the chosen server's catalogue (a choice list for every tool of every server
    would be long and, for local tools, unknowable without scanning the ledger)."""

    title = "tool"
    parameter_name = "tool_name"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        from ..models import McpTool

        server = request.GET.get(ServerFilter.parameter_name)
        names: list[str] = []
        if server and server != LOCAL:
            names = list(
                McpTool.objects.filter(server__identifier=server)
                .order_by("tool_name")
                .values_list("tool_name", flat=True)[:CHOICES_SHOWN]
            )
        value = self.value()
        if value and value not in names:
            names.append(value)  # a filter given in the URL stays visible and applied
        return [(name, name) for name in names]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
        from ..models import McpTool

        value = self.value()
        if value is None:
            return queryset
        if request.GET.get(ServerFilter.parameter_name) is None:
            # The (tool, server, created) index serves a tool with its server: a tool given
            # alone (a link) gets its server from the catalogue, when the catalogue has it.
            servers = McpTool.objects.filter(tool_name=value).values_list("server__identifier", flat=True)
            identifier = servers.first()
            if identifier is not None:
                return queryset.filter(tool_name=value, server_identifier=identifier)
        return queryset.filter(tool_name=value)


class StatusFilter(admin.SimpleListFilter):
    """Every state, from the model's choices (no query)."""

    title = "status"
    parameter_name = "status__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(str(value), str(label)) for value, label in ToolCallStatus.choices]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
        value = self.value()
        return queryset if value is None else queryset.filter(status=value)


class InboxFilter(StatusFilter):
    """The Approvals inbox: by default the calls that wait on a person (awaiting a decision, or
    approved and not yet run); "All" and each state on demand."""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(ALL, "All"), *super().lookups(request, model_admin)]

    def choices(self, changelist: Any) -> Any:
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": "Waiting (to decide or to run)",
        }
        for value, title in self.lookup_choices:
            yield {
                "selected": self.value() == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
        value = self.value()
        if value is None:
            return queryset.filter(status__in=PENDING)
        return queryset if value == ALL else queryset.filter(status=value)
