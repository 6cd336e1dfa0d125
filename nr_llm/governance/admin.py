"""The Tool calls and Approvals pages. Thin: the buttons call ``decisions`` and ``tools.resume``.

Rows are the ledger's: nobody adds, edits or deletes them here. The arguments and the kept
answer are shown (decrypted) only to staff holding ``view_toolcall_arguments`` or
``approve_toolcall``; Approve, Deny and Run are POST-only, CSRF-protected buttons on the
call's page, for holders of ``approve_toolcall``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any

from django.contrib import admin, messages
from django.db import DatabaseError
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce, Now
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from .. import admin_columns
from ..models import McpServer, McpTool
from ..servers.credentials import CredentialUnavailable
from ..tools import resume
from ..tools.task_cancel import cancel_task
from . import columns, dbclock, decisions, filters, ledger, paging, preview, summary, visible
from .ceiling import label
from .models import PENDING, ToolCall, ToolCallApproval, ToolCallStatus

logger = logging.getLogger("nr_llm.governance")

STYLES = {"all": ["nr_llm/admin.css"]}
ARGUMENTS_PERMISSION = "nr_llm.view_toolcall_arguments"
MESSAGE_PREVIEW_CHARS = 300
HIDDEN = "hidden: needs the permission “Can view tool call arguments and results”"


def may_see_arguments(request: HttpRequest) -> bool:
    return request.user.has_perm(ARGUMENTS_PERMISSION) or request.user.has_perm(decisions.APPROVE_PERMISSION)


@admin.register(ToolCall)
class ToolCallAdmin(admin.ModelAdmin[ToolCall]):
    change_form_template = "admin/nr_llm/toolcall/change_form.html"
    # Related facts share a column so the list fits a 1280 px screen beside the filters.
    list_display = ["when_column", "tool_column", "actor_label", "status_column"]
    list_display_links = ["when_column"]
    change_list_template = "admin/nr_llm/toolcall/change_list.html"
    # Fixed choices or small tables, each on an index; no date hierarchy (it reads DISTINCT
    # dates of the whole ledger) and no facets (a count per choice): filters.py.
    list_filter = [
        filters.SinceFilter,
        filters.StatusFilter,
        filters.ServerFilter,
        filters.ToolFilter,
    ]
    show_facets = admin.ShowFacets.NEVER
    # One exact, indexed lookup (get_search_results); the field named here only shows the box.
    search_fields = ["actor_label"]
    search_help_text = "An actor exactly as recorded (a username or the caller's label), or a call's id."
    ordering = ["-created"]
    list_per_page = 50
    show_full_result_count = False
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "id",
                    "created",
                    "tool_column",
                    "actor_column",
                    "status_column",
                    "progress_column",
                    "task_column",
                    "era",
                    "duration_ms",
                    "data_class_column",
                ]
            },
        ),
        ("Arguments", {"fields": ["arguments_column", "digest_column", "result_column"]}),
        (
            "Approval",
            {"fields": ["expires_at", "decision_column", "decided_at", "decision_note"]},
        ),
        (
            "The tool as it was when the call was made",
            {"fields": ["tool_description", "schema_column", "definition_now_column"]},
        ),
    ]
    # Every field is read-only; the two "hidden" stand-ins replace the arguments and the answer
    # for staff who may not read them (get_fieldsets).
    readonly_fields = [
        *(name for _, options in fieldsets for name in options["fields"] if isinstance(name, str)),
        "arguments_hidden",
        "result_hidden",
    ]

    class Media:
        css = STYLES

    # -- the ledger is written by the ledger only ---------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # An audit row is kept; old rows are pruned by the site's own retention job, if any.
        return False

    # -- pages ----------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        # Before the inherited patterns: their "<object_id>/" would otherwise swallow these.
        wrap = self.admin_site.admin_view
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path(
                "<path:object_id>/approve/",
                wrap(lambda request, object_id: self.decide(request, object_id, "approve")),
                name=f"{name}_approve",
            ),
            path(
                "<path:object_id>/deny/",
                wrap(lambda request, object_id: self.decide(request, object_id, "deny")),
                name=f"{name}_deny",
            ),
            path(
                "<path:object_id>/resume/",
                wrap(lambda request, object_id: self.resume(request, object_id)),
                name=f"{name}_resume",
            ),
            path(
                "<path:object_id>/cancel-task/",
                wrap(lambda request, object_id: self.cancel_task(request, object_id)),
                name=f"{name}_cancel_task",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        _expire_due()
        context = dict(extra_context or {})
        # On the list as it opens: a filtered or searched list is about those rows, not this.
        if self.change_list_template == ToolCallAdmin.change_list_template and not request.GET:
            rows = _summary()
            context["summary"] = rows[: summary.SERVERS_SHOWN]
            context["summary_hidden"] = len(rows) - len(context["summary"])
            context["summary_sample"] = summary.SAMPLE
            context["summary_estimated"] = any(w.estimated for row in rows for w in row.windows)
        return super().changelist_view(request, context)

    def get_paginator(
        self,
        request: HttpRequest,
        queryset: QuerySet[ToolCall],
        per_page: int,
        orphans: int = 0,
        allow_empty_first_page: bool = True,
    ) -> paging.WindowPaginator:
        return paging.paginator_for(
            request, queryset, per_page, orphans=orphans, allow_empty_first_page=allow_empty_first_page
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[ToolCall], search_term: str
    ) -> tuple[QuerySet[ToolCall], bool]:
        # Django's search ORs an icontains per field: a scan of every row. An exact actor, or a
        # call id pasted from a log, each reads one index.
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            return queryset.filter(pk=uuid.UUID(term)), False
        except ValueError:
            return queryset.filter(actor_label=term), False

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        _expire_due()
        return super().change_view(request, object_id, form_url, extra_context)

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: ToolCall | None = None,
    ) -> Any:
        # The row Django's change view already read: the buttons need no second query.
        if obj is not None and request.user.has_perm(decisions.APPROVE_PERMISSION):
            context["decision"] = self._decision_context(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _decision_context(self, call: ToolCall) -> dict[str, Any]:
        name = f"admin:{self.opts.app_label}_{self.opts.model_name}"
        return {
            "can_approve": call.status == ToolCallStatus.AWAITING_APPROVAL,
            "can_deny": call.status in PENDING,
            "can_resume": call.status == ToolCallStatus.APPROVED,
            "approve_url": reverse(f"{name}_approve", args=[call.pk]),
            "deny_url": reverse(f"{name}_deny", args=[call.pk]),
            "resume_url": reverse(f"{name}_resume", args=[call.pk]),
            "can_cancel_task": call.status == ToolCallStatus.RUNNING and bool(call.task_state),
            "cancel_task_url": reverse(f"{name}_cancel_task", args=[call.pk]),
            "digest": call.arguments_digest,
        }

    def decide(self, request: HttpRequest, object_id: str, verb: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        note = request.POST.get("note", "")
        try:
            if verb == "approve":
                done = decisions.approve(object_id, request.user, note, digest=request.POST.get("digest"))
                text = f"Tool call {done.call_id} approved{' (self-approved)' if done.self_approved else ''}."
                text += (
                    " It runs when it is resumed: the site's agent loop, manage.py mcp_call --resume, or Run."
                )
            else:
                done = decisions.deny(object_id, request.user, note)
                text = f"Tool call {done.call_id} denied; it will not run."
        except decisions.DecisionRefused as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return self._back(object_id)
        self.message_user(request, text, messages.SUCCESS)
        return self._back(object_id)

    def resume(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        # Running a call acts on a remote system: the approver's right, checked before the id.
        if not request.user.has_perm(decisions.APPROVE_PERMISSION):
            self.message_user(
                request,
                f"You may not run tool calls: that needs the permission {decisions.APPROVE_PERMISSION}.",
                messages.ERROR,
            )
            return self._back(object_id)
        result = resume(object_id)
        shown = Truncator(" ".join(result.text.split())).chars(MESSAGE_PREVIEW_CHARS)
        level = {
            "succeeded": messages.SUCCESS,
            "running": messages.INFO,
            "awaiting_approval": messages.WARNING,
        }
        self.message_user(
            request,
            f"Tool call {object_id} ({result.status}): {shown}",
            level.get(result.status, messages.ERROR),
        )
        return self._back(object_id)

    def cancel_task(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        # Cancelling acts on a remote system, as running does: the approver's right.
        if not request.user.has_perm(decisions.APPROVE_PERMISSION):
            self.message_user(
                request,
                f"You may not cancel tasks: that needs the permission {decisions.APPROVE_PERMISSION}.",
                messages.ERROR,
            )
            return self._back(object_id)
        report = cancel_task(object_id)
        self.message_user(request, report.text, messages.SUCCESS if report.ok else messages.WARNING)
        return self._back(object_id)

    def _back(self, object_id: str) -> HttpResponseRedirect:
        name = f"admin:{self.opts.app_label}_{self.opts.model_name}"
        try:
            pk = decisions.parse_call_id(object_id)
        except decisions.DecisionRefused:
            return HttpResponseRedirect(reverse(f"{name}_changelist"))
        if not ToolCall.objects.filter(pk=pk).exists():
            return HttpResponseRedirect(reverse(f"{name}_changelist"))
        return HttpResponseRedirect(reverse(f"{name}_change", args=[pk]))

    # -- columns ----------------------------------------------------------------------------

    @admin.display(description="when", ordering="created")
    def when_column(self, obj: ToolCall) -> SafeString:
        return columns.when(obj, timezone.now())

    @admin.display(description="tool · server", ordering="tool_name")
    def tool_column(self, obj: ToolCall) -> SafeString:
        return columns.tool(obj)

    @admin.display(description="status", ordering="status")
    def status_column(self, obj: ToolCall) -> SafeString:
        return columns.status(obj, timezone.now())

    @admin.display(description="progress")
    def progress_column(self, obj: ToolCall) -> str:
        return columns.progress(obj)

    @admin.display(description="MCP task")
    def task_column(self, obj: ToolCall) -> str:
        # The kept JSON holds no session id or request state (call_tasks.stored): safe to show.
        task = obj.task_state if isinstance(obj.task_state, dict) else None
        if not task:
            return "none"
        said = f" · {task['status_message']}" if task.get("status_message") else ""
        return f"{task.get('task_id', '')} · {task.get('status', '')}{said} ({task.get('era', '')} form)"

    @admin.display(description="actor")
    def actor_column(self, obj: ToolCall) -> str:
        if not obj.actor_label:
            return "not named by the caller"
        return (
            f"{obj.actor_label} (user)"
            if obj.actor_user_id
            else f"{obj.actor_label} (label given by the caller)"
        )

    @admin.display(description="data class · ceiling")
    def data_class_column(self, obj: ToolCall) -> str:
        declared = label(obj.data_class) if obj.data_class else "none (local tool or no server)"
        return f"{declared} · ceiling {label(obj.data_class_ceiling) or 'none'}"

    @admin.display(description="arguments")
    def arguments_column(self, obj: ToolCall) -> SafeString | str:
        try:
            # What runs, as it runs: no character hidden from the approver (visible.py).
            return visible.arguments_html(ledger.arguments_of(obj))
        except CredentialUnavailable as exc:
            return f"cannot be shown: {exc}"

    @admin.display(description="arguments")
    def arguments_hidden(self, obj: ToolCall) -> str:
        return HIDDEN

    @admin.display(description="arguments SHA-256")
    def digest_column(self, obj: ToolCall) -> SafeString:
        return columns.digest(obj)

    @admin.display(description="answer (kept start)")
    def result_column(self, obj: ToolCall) -> SafeString | str:
        try:
            kept = preview.preview_of(obj)
        except CredentialUnavailable as exc:
            return f"cannot be shown: {exc}"
        if not kept:
            return "none kept"
        # The structured content is kept pretty-printed after the text (preview.preview).
        text, _, structured = kept.partition(preview.STRUCTURED_HEADING)
        if not structured:
            return format_html("<pre>{}</pre>", kept)
        shown = format_html('<p>structured content:</p><pre class="nr-llm-structured">{}</pre>', structured)
        return format_html("<pre>{}</pre>{}", text, shown) if text else shown

    @admin.display(description="answer (kept start)")
    def result_hidden(self, obj: ToolCall) -> str:
        return HIDDEN

    @admin.display(description="decision")
    def decision_column(self, obj: ToolCall) -> SafeString | str:
        if obj.status == ToolCallStatus.DENIED:
            return f"denied by {obj.approver_label}"
        if obj.approved_digest:
            how = "self-approved (by the user who made the call)" if obj.self_approved else "approved"
            return format_html(
                "{} by {}; bound to <code>{}</code>",
                how,
                obj.approver_label,
                obj.approved_digest[: columns.DIGEST_SHOWN],
            )
        if obj.status == ToolCallStatus.AWAITING_APPROVAL:
            return "none yet"
        return "none needed" if obj.status != ToolCallStatus.EXPIRED else "none before it expired"

    @admin.display(description="input schema")
    def schema_column(self, obj: ToolCall) -> SafeString:
        return admin_columns.pretty_json(obj.tool_input_schema)

    @admin.display(description="the tool now")
    def definition_now_column(self, obj: ToolCall) -> SafeString | str:
        if obj.tool_id is None:
            return (
                "no catalogue tool (a local tool)"
                if not obj.server_identifier
                else "no longer in the catalogue"
            )
        now = McpTool.objects.filter(pk=obj.tool_id).values("description", "input_schema").first()
        if now is None:
            return "no longer in the catalogue"
        if (now["description"], now["input_schema"]) == (obj.tool_description, obj.tool_input_schema):
            return "unchanged since the call"
        return format_html(
            '<strong class="nr-llm-warning">{}</strong>',
            "changed since the call: a resume refuses to run it",
        )

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        # Fields, not a check inside them: a display method has no request to ask.
        if may_see_arguments(request):
            return self.fieldsets
        hidden = {"arguments_column": "arguments_hidden", "result_column": "result_hidden"}
        return [
            (
                title,
                {
                    **options,
                    "fields": [
                        hidden.get(name, name) if isinstance(name, str) else name
                        for name in options["fields"]
                    ],
                },
            )
            for title, options in self.fieldsets or []
        ]


@admin.register(ToolCallApproval)
class ToolCallApprovalAdmin(ToolCallAdmin):
    """The inbox: calls waiting on a person (to decide, or approved and not yet run), newest
    first; every other call behind the status filter's "All"."""

    # Django's own list template: the summary is the Tool calls page's.
    change_list_template = "admin/change_list.html"
    list_filter = [filters.InboxFilter, filters.ServerFilter, filters.SinceFilter]
    ordering = ["-created"]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("nr_llm.view_toolcall") or request.user.has_perm(
            decisions.APPROVE_PERMISSION
        )

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def get_model_perms(self, request: HttpRequest) -> dict[str, bool]:
        # Called as a page builds its app list, before the plural is rendered: count now.
        _refresh_waiting()
        return super().get_model_perms(request)


def awaiting_count() -> Any:
    """A per-server subquery of calls awaiting approval, for the server changelist (no extra join)."""
    waiting = (
        ToolCall.objects.filter(
            server=OuterRef("pk"), status=ToolCallStatus.AWAITING_APPROVAL, expires_at__gt=Now()
        )
        .order_by()
        .values("server")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return Coalesce(Subquery(waiting, output_field=IntegerField()), 0)


def awaiting_link(identifier: str, count: int) -> SafeString:
    """ "2 awaiting approval", linking to them; "" when none waits."""
    if not count:
        return SafeString("")
    url = reverse("admin:nr_llm_toolcallapproval_changelist")
    query = f"?status__exact={ToolCallStatus.AWAITING_APPROVAL}&server_identifier={identifier}"
    return format_html(
        '<div><a class="nr-llm-awaiting" href="{}{}">{} awaiting approval</a></div>', url, query, count
    )


WAITING_COUNTED = 1000


def waiting_count() -> int:
    """Calls awaiting a decision or their run, not yet expired (the pending index), counted to
    ``WAITING_COUNTED`` at most."""
    waiting = ToolCall.objects.filter(status__in=PENDING, expires_at__gt=Now()).order_by()
    return waiting[:WAITING_COUNTED].count()


# The admin renders a model's plural a dozen times a page (index, sidebar, breadcrumbs, the
# sort of the app list): the count is taken once when the page builds its app list
# (get_model_perms) and reused by this thread for a second, not counted at every mention.
_waiting = threading.local()
WAITING_REUSED_SECONDS = 1.0


def _refresh_waiting() -> int:
    try:
        count = waiting_count()
    except DatabaseError:  # before migrate, or a database that is down: the name alone
        count = 0
    _waiting.value = (time.monotonic(), count)
    return count


def _approvals_label() -> str:
    # The admin index names a model by its plural and offers no other hook for a count.
    taken = getattr(_waiting, "value", None)
    if taken is not None and time.monotonic() - taken[0] < WAITING_REUSED_SECONDS:
        count = taken[1]
    else:
        count = _refresh_waiting()
    if not count:
        return "approvals"
    return f"approvals ({count}{'+' if count >= WAITING_COUNTED else ''} waiting)"


# Set on the class's options, not in its Meta: migrations read Meta only, so the count never
# reaches them; a lazy string is counted when a page renders it.
ToolCallApproval._meta.verbose_name_plural = lazy(_approvals_label, str)()


def _summary() -> list[summary.ServerSummary]:
    servers = list(McpServer.objects.order_by("identifier").values_list("identifier", flat=True))
    # The database's clock: a waiting call is counted as its expiry is judged (decisions).
    return summary.summarise(dbclock.database_now(), [*servers, ""])


def _expire_due() -> None:
    """Pending calls past their time are shown (and filtered) as expired, not as waiting."""
    # Most pages find none due: one read on the pending index, instead of the ledger's own
    # transaction (a thread and a connection) for an UPDATE of nothing.
    if not ToolCall.objects.filter(status__in=PENDING, expires_at__lte=Now()).exists():
        return
    try:
        decisions.expire_due()
    except ledger.LedgerUnavailable as exc:
        logger.warning("could not expire overdue tool calls: %s", exc)
