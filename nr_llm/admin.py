"""The operator surface. Thin: actions call services and report with message_user.

Admin actions are POST-only and CSRF-protected by Django itself; each one here also
requires the change permission (``permissions=["change"]``), so a view-only operator
neither sees nor can post them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from . import admin_columns as columns
from . import catalogue, tasks
from .authorization import admin as authorization_admin  # noqa: F401 - registers per-user grants
from .authorization import columns as authorization_columns
from .authorization import service as authorization_service
from .authorization import views as authorization_views
from .catalogue import admin as features_admin  # registers resources and prompts
from .catalogue import trial as tool_trial
from .forms import McpServerForm, McpToolForm, TryToolForm
from .governance import admin as governance_admin  # registers Tool calls and Approvals
from .models import DEFINITION_CHANGED, AuthPlacement, McpServer, McpTool
from .servers import connection, readiness
from .tools.offering import strict_reason

STYLES = {"all": ["nr_llm/admin.css"]}


def _has_grant_row(server: McpServer) -> bool:
    try:
        server.oauth_grant  # noqa: B018 - raises when there is no row yet
    except McpServer.oauth_grant.RelatedObjectDoesNotExist:
        return False
    return True


def _connection_line(server: McpServer) -> SafeString:
    """Transport and authentication; for OAuth, the grant's state in the same line."""
    line = columns.connection(server.auth_placement, server.auth_header_name)
    if not server.uses_oauth:
        return line
    record = server.oauth_grant if _has_grant_row(server) else None
    return format_html("{}: {}", line, authorization_columns.cell(server, record, timezone.now()))


class _OneChoiceFilter(admin.SimpleListFilter):
    """A filter with one choice besides All: the rows that match ``condition``."""

    choice = ""
    label = ""

    def condition(self) -> Q:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(self.choice, self.label)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(self.condition()) if self.value() == self.choice else queryset


class NeedsAttentionFilter(_OneChoiceFilter):
    title = "authorization"
    parameter_name = "authorization"
    choice, label = "attention", "Needs attention"

    def condition(self) -> Q:
        return authorization_columns.needs_attention()


class AwaitingReviewFilter(_OneChoiceFilter):
    title = "definition"
    parameter_name = "definition"
    choice, label = "changed", "Changed, awaiting review"

    def condition(self) -> Q:
        return Q(disabled_reason=DEFINITION_CHANGED)


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin[McpServer]):
    form = McpServerForm
    # Related facts share a column so the list fits a 1280 px screen beside the filters.
    list_display = [
        "server_column",
        "enabled",
        "contact_column",
        "catalogue_column",
        "policy_column",
    ]
    list_display_links = ["server_column"]
    list_filter = ["enabled", NeedsAttentionFilter, "import_status", "data_class"]
    search_fields = ["identifier", "name", "url"]
    actions = ["test_connection_action", "import_catalogue_action"]
    # A site's users may be many: a key, not a select of every user.
    raw_id_fields = ["catalogue_user"]
    # Authentication fields by the placement they serve; the page shows the chosen one's
    # (server_form.js), and without JavaScript folds the others.
    CREDENTIAL_FIELDS = [
        "auth_header_name",
        "credential_state",
        "new_credential",
        "clear_credential",
        "credential_env",
    ]
    OAUTH_FIELDS = [
        "oauth_grant_type",
        "oauth_mode",
        "oauth_dpop",
        "oauth_registration",
        "oauth_issuer",
        "oauth_client_id",
        "oauth_secret_state",
        "new_oauth_client_secret",
        "new_oauth_private_key",
        "clear_oauth_client_secret",
        "oauth_key_id",
        "oauth_scopes",
        # Enterprise-managed authorization, workload identity, and a per-user server's imports.
        "oauth_idp_token_endpoint",
        "oauth_idp_client_id",
        "new_oauth_idp_client_secret",
        "oauth_assertion_file",
        "oauth_assertion_env",
        "catalogue_user",
    ]
    # The import error is on the Connection panel at the top, whole.
    OBSERVED_FIELDS = [
        "import_status",
        "import_task_column",
        "last_imported",
        "tool_count",
        "last_contact",
        "last_latency_ms",
        "created",
        "updated",
    ]
    readonly_fields = [
        "contact_state",
        "catalogue_state",
        "credential_state",
        "oauth_secret_state",
        "oauth_status",
        "import_error",
        *OBSERVED_FIELDS,
    ]

    class Media:
        css = STYLES
        js = ["nr_llm/server_form.js"]

    def get_fieldsets(self, request: HttpRequest, obj: McpServer | None = None) -> Any:
        placement = obj.auth_placement if obj is not None else AuthPlacement.NONE
        oauth_fields = (
            self.OAUTH_FIELDS if obj is not None and obj.uses_oauth else ["oauth_status", *self.OAUTH_FIELDS]
        )
        sets: list[tuple[str | None, dict[str, Any]]] = []
        if obj is not None:
            # First on the page: what the server is doing and the buttons that act on it.
            status = [*(["oauth_status"] if obj.uses_oauth else []), "contact_state", "catalogue_state"]
            sets.append(("Connection", {"fields": status, "classes": ["nr-llm-connection"]}))
        return [
            *sets,
            (None, {"fields": ["identifier", "name", "description", "url", "enabled"]}),
            (
                "Policy",
                {
                    "fields": [
                        "data_class",
                        "requires_approval",
                        "operation_timeout",
                        "max_concurrent_calls",
                        "run_writes_alone",
                        "watch_changes",
                    ]
                },
            ),
            ("Authentication", {"fields": ["auth_placement"]}),
            (
                "Credential",
                {
                    "fields": self.CREDENTIAL_FIELDS,
                    "classes": _for_placements(placement, AuthPlacement.BEARER, AuthPlacement.HEADER),
                    "description": "Used when Authentication is Authorization: Bearer or a named header.",
                },
            ),
            (
                "OAuth 2.1",
                {
                    "fields": oauth_fields,
                    "classes": _for_placements(placement, AuthPlacement.OAUTH),
                    "description": "Used when Authentication is OAuth 2.1.",
                },
            ),
            ("Observed", {"fields": self.OBSERVED_FIELDS, "classes": ["collapse"]}),
        ]

    def get_urls(self) -> list[URLPattern]:
        # Before the inherited patterns: their "<object_id>/" would otherwise swallow these.
        wrap = self.admin_site.admin_view
        return [
            path(
                "<path:object_id>/test-connection/",
                wrap(lambda request, object_id: self._on_page(request, object_id, self._test_one)),
                name="nr_llm_mcpserver_test_connection",
            ),
            path(
                "<path:object_id>/import-catalogue/",
                wrap(lambda request, object_id: self._on_page(request, object_id, self._import_one)),
                name="nr_llm_mcpserver_import_catalogue",
            ),
            path(
                "oauth/callback/",
                wrap(lambda request: authorization_views.callback(self, request)),
                name="nr_llm_oauth_callback",
            ),
            path(
                "<path:object_id>/oauth/connect/",
                wrap(lambda request, object_id: authorization_views.connect(self, request, object_id)),
                name="nr_llm_mcpserver_oauth_connect",
            ),
            path(
                "<path:object_id>/oauth/disconnect/",
                wrap(lambda request, object_id: authorization_views.disconnect(self, request, object_id)),
                name="nr_llm_mcpserver_oauth_disconnect",
            ),
            *super().get_urls(),
        ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[McpServer]:
        # One query for the tools column instead of three per row.
        return (
            super()
            .get_queryset(request)
            .select_related("oauth_grant")
            .annotate(
                tools_total=Count("tools"),
                tools_enabled=Count("tools", filter=Q(tools__enabled=True)),
                tools_orphaned=Count("tools", filter=Q(tools__orphaned=True)),
                awaiting_calls=governance_admin.awaiting_count(),
            )
        )

    @admin.display(description="Stored credential")
    def credential_state(self, obj: McpServer) -> str:
        if obj.credential_ciphertext:
            return "set"
        if obj.credential_env:
            return f"from environment variable {obj.credential_env}"
        return "not set"

    @admin.display(description="Stored client secret or key")
    def oauth_secret_state(self, obj: McpServer) -> str:
        held = [
            what
            for what, ciphertext in (
                ("client secret", obj.oauth_client_secret_ciphertext),
                ("private key", obj.oauth_private_key_ciphertext),
            )
            if ciphertext
        ]
        return " and ".join(held) + " set" if held else "not set"

    @admin.display(description="authorization")
    def oauth_status(self, obj: McpServer) -> SafeString | str:
        if obj.pk is None or not obj.uses_oauth:
            return "Choose OAuth 2.1 as the authentication and save: Connect then appears at the top."
        record = obj.oauth_grant if _has_grant_row(obj) else None
        try:
            callback = authorization_service.redirect_uri()
        except authorization_service.ConnectRefused as exc:
            callback = str(exc)
        connect = reverse("admin:nr_llm_mcpserver_oauth_connect", args=[obj.pk])
        # Disconnect only when there is something to disconnect.
        disconnect = (
            _page_button("Disconnect", reverse("admin:nr_llm_mcpserver_oauth_disconnect", args=[obj.pk]))
            if record is not None and record.has_tokens
            else ""
        )
        return format_html(
            '{}<div class="nr-llm-buttons">{}{}</div><div class="nr-llm-detail">Redirect URI to register: '
            "<code>{}</code></div>",
            authorization_columns.cell(obj, record, timezone.now()),
            _page_button("Connect", connect),
            disconnect,
            callback,
        )

    @admin.display(description="last successful contact")
    def contact_state(self, obj: McpServer) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div><div class="nr-llm-buttons">{}</div>',
            columns.last_contact(obj.last_contact, obj.last_latency_ms, timezone.now()),
            columns.connection(obj.auth_placement, obj.auth_header_name),
            _page_button("Test connection", reverse("admin:nr_llm_mcpserver_test_connection", args=[obj.pk])),
        )

    @admin.display(description="catalogue")
    def catalogue_state(self, obj: McpServer) -> SafeString:
        now = timezone.now()
        tools = obj.tools.aggregate(
            total=Count("pk"),
            enabled=Count("pk", filter=Q(enabled=True)),
            orphaned=Count("pk", filter=Q(orphaned=True)),
        )
        task = columns.import_task(obj.import_task_state, obj.import_task_since, obj.budget_seconds, now)
        return format_html(
            '<a href="{}">{}</a>{}<div class="nr-llm-detail">{}</div>{}<div class="nr-llm-buttons">{}</div>',
            reverse("admin:nr_llm_mcptool_changelist") + f"?server__id__exact={obj.pk}",
            columns.tools(tools["enabled"], tools["total"], tools["orphaned"], obj.last_imported is not None),
            format_html("<div>{}</div>", task) if task else "",
            format_html(
                "{}{}",
                columns.last_import(obj.import_status, obj.last_imported, now),
                features_admin.counts(obj),
            ),
            format_html('<div class="nr-llm-detail nr-llm-error-text">{}</div>', obj.import_error)
            if obj.import_error
            else "",
            _page_button(
                "Import catalogue", reverse("admin:nr_llm_mcpserver_import_catalogue", args=[obj.pk])
            ),
        )

    @admin.display(description="server", ordering="name")
    def server_column(self, obj: McpServer) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>{}',
            obj.name,
            columns.breakable(obj.identifier),
            columns.hold_flags(readiness.holds(obj.enabled, obj.data_class)),
        )

    def save_model(self, request: HttpRequest, obj: McpServer, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # Saved as asked, but a server that cannot be used yet says why now, not at its first import.
        for hold in readiness.holds(obj.enabled, obj.data_class):
            self.message_user(request, f"Saved {obj.identifier}, but {hold.why}.", messages.WARNING)

    @admin.display(description="import task")
    def import_task_column(self, obj: McpServer) -> SafeString | str:
        task = columns.import_task(
            obj.import_task_state, obj.import_task_since, obj.budget_seconds, timezone.now()
        )
        return task or "none waiting or running"

    @admin.display(description="last successful contact · connection", ordering="last_contact")
    def contact_column(self, obj: McpServer) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>',
            columns.last_contact(obj.last_contact, obj.last_latency_ms, timezone.now()),
            _connection_line(obj),
        )

    @admin.display(description="tools · last import", ordering="last_imported")
    def catalogue_column(self, obj: McpServer) -> SafeString:
        now = timezone.now()
        counts = columns.tools(
            getattr(obj, "tools_enabled", 0),
            getattr(obj, "tools_total", 0),
            getattr(obj, "tools_orphaned", 0),
            obj.last_imported is not None,
        )
        url = reverse("admin:nr_llm_mcptool_changelist") + f"?server__id__exact={obj.pk}"
        task = columns.import_task(obj.import_task_state, obj.import_task_since, obj.budget_seconds, now)
        return format_html(
            '<a href="{}">{}</a>{}<div class="nr-llm-detail">{}</div>{}',
            url,
            counts,
            format_html("<div>{}</div>", task) if task else "",
            columns.last_import(obj.import_status, obj.last_imported, now),
            format_html('<div class="nr-llm-detail">{}</div>', columns.error_preview(obj.import_error))
            if obj.import_error
            else "",
        )

    @admin.display(description="data class · approval", ordering="data_class")
    def policy_column(self, obj: McpServer) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>{}',
            columns.data_class(obj.data_class),
            columns.approval(obj.requires_approval),
            governance_admin.awaiting_link(obj.identifier, getattr(obj, "awaiting_calls", 0)),
        )

    @admin.action(description="Test connection", permissions=["change"])
    def test_connection_action(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        # One ping per server, each opening its own deadline: a slow server spends its
        # own budget, never the next one's.
        for server in queryset:
            self._test_one(request, server)

    @admin.action(description="Import catalogue", permissions=["change"])
    def import_catalogue_action(self, request: HttpRequest, queryset: QuerySet[McpServer]) -> None:
        # One task per server: each import opens its own deadline, and a queue backend
        # can run them side by side.
        for server in queryset:
            self._import_one(request, server)

    def _test_one(self, request: HttpRequest, server: McpServer) -> None:
        tested = connection.test_connection(server)
        report = tested.report
        if report.reachable:
            self.message_user(
                request, columns.connection_summary(server.identifier, report), messages.SUCCESS
            )
            return
        text = f"Connection to {server.identifier} failed: {report.error}"
        if tested.needs_reconnect:
            text += " It is now marked “needs reconnect”: open the server and press Connect."
        self.message_user(request, text, messages.ERROR)

    def _import_one(self, request: HttpRequest, server: McpServer) -> None:
        self.message_user(request, *columns.import_message(tasks.start_import(server)))

    def _on_page(
        self, request: HttpRequest, object_id: str, act: Callable[[HttpRequest, McpServer], None]
    ) -> HttpResponse:
        """A button of the change page: the changelist action's work, for this one server."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        server = self.get_object(request, object_id)
        if server is None:
            raise Http404("No such MCP server.")
        if not self.has_change_permission(request, server):
            raise PermissionDenied
        act(request, server)
        return HttpResponseRedirect(reverse("admin:nr_llm_mcpserver_change", args=[server.pk]))


def _page_button(label: str, url: str) -> SafeString:
    """A button of the change page posting to its own view.

    formaction: it posts the change form's CSRF token to ``url``, which ignores the other
    fields (a nested form is not allowed in HTML); formnovalidate: half-typed fields must not stop it.
    """
    return format_html(
        '<button type="submit" class="button" formaction="{}" formnovalidate>{}</button>', url, label
    )


def _for_placements(chosen: str, *placements: str) -> list[str]:
    """A fieldset's classes: which placements it serves, folded when the saved one is not among them."""
    return [
        *(f"nr-llm-for-{placement}" for placement in placements),
        *([] if chosen in placements else ["collapse"]),
    ]


@admin.register(McpTool)
class McpToolAdmin(admin.ModelAdmin[McpTool]):
    form = McpToolForm
    # Description and remote name are second lines of the first two columns: seven columns
    # would not fit a 1280 px screen beside the filters and the admin's navigation.
    list_display = ["name_column", "server_column", "enabled", "state_column", "try_column"]
    list_display_links = ["name_column"]
    list_filter = ["server", "enabled", "orphaned", AwaitingReviewFilter]
    list_select_related = ["server"]
    search_fields = ["tool_name", "remote_name", "description"]
    actions = ["enable_tools", "disable_tools"]
    fields = [
        "tool_name",
        "server",
        "remote_name",
        "definition_review",
        "enabled",
        "run_alone",
        "reviewed_fingerprint",
        "orphan_state",
        "try_state",
        "title",
        "description",
        "schema_column",
        "strict_column",
        "output_schema_column",
        "annotations_column",
        "created",
        "updated",
    ]
    readonly_fields = [
        "server",
        "tool_name",
        "remote_name",
        "title",
        "description",
        "schema_column",
        "strict_column",
        "output_schema_column",
        "annotations_column",
        "definition_review",
        "orphan_state",
        "try_state",
        "created",
        "updated",
    ]

    class Media:
        css = STYLES

    def get_urls(self) -> list[URLPattern]:
        # Before the inherited patterns: their "<object_id>/" would otherwise swallow "/try/".
        try_url = path(
            "<path:object_id>/try/",
            self.admin_site.admin_view(self.try_tool_view),
            name="nr_llm_mcptool_try",
        )
        return [try_url, *super().get_urls()]

    def try_tool_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        tool = self.get_object(request, object_id)
        if tool is None:
            raise Http404("No such MCP tool.")
        # Running a tool acts on a remote system: the same right as changing the tool.
        if not self.has_change_permission(request, tool):
            raise PermissionDenied
        if refusal := _untryable(tool):
            self.message_user(request, f"Cannot try {tool.tool_name}: {refusal}.", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:nr_llm_mcptool_change", args=[tool.pk]))
        form = TryToolForm(request.POST if request.method == "POST" else None, schema=tool.input_schema)
        report = None
        if form.is_valid():
            report = tool_trial.try_tool(tool, form.cleaned_data["arguments"], actor=request.user)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"Try {tool.tool_name}",
            "tool": tool,
            "form": form,
            "report": report,
            "elapsed": f"{report.elapsed_seconds:.2f}" if report else "",
            "budget": f"{tool.server.budget_seconds:g}",
            "schema": columns.pretty_json(tool.input_schema),
        }
        return TemplateResponse(request, "admin/nr_llm/mcptool/try_tool.html", context)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Tools come from a server's catalogue; one typed by hand would call nothing real.
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: McpTool | None = None) -> list[str]:
        # The bulk action's rule on the change form too: an orphan is not switched on.
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "enabled"] if obj is not None and obj.orphaned and not obj.enabled else fields

    @admin.display(description="tool · description", ordering="tool_name")
    def name_column(self, obj: McpTool) -> SafeString:
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>',
            columns.breakable(obj.tool_name),
            columns.clipped(obj.description, DESCRIPTION_CHARS) if obj.description else "no description",
        )

    @admin.display(description="server · remote name", ordering="server__name")
    def server_column(self, obj: McpTool) -> SafeString:
        # Not the foreign key itself: the admin keeps that on one line (class "nowrap"),
        # and a long server name would push the Try column under the filters. The
        # identifier is in the tool's name already.
        return format_html(
            '{}<div class="nr-llm-detail">{}</div>', obj.server.name, columns.breakable(obj.remote_name)
        )

    @admin.display(description="orphaned", ordering="orphaned")
    def orphan_column(self, obj: McpTool) -> SafeString | str:
        if not obj.orphaned:
            return ""
        since = f"since {obj.orphaned_at:%Y-%m-%d %H:%M}" if obj.orphaned_at else "gone from its server"
        return format_html(
            '<strong class="nr-llm-warning" title="no longer in the server\'s catalogue">ORPHANED</strong>'
            '<div class="nr-llm-detail">{}</div>',
            since,
        )

    @admin.display(description="orphaned")
    def orphan_state(self, obj: McpTool) -> SafeString | str:
        # The change page answers the question in words; the list leaves the cell of a live tool empty.
        if not obj.orphaned:
            return "no: the server still offers it"
        since = f" since {obj.orphaned_at:%Y-%m-%d %H:%M}" if obj.orphaned_at else ""
        return format_html(
            '<strong class="nr-llm-warning">ORPHANED{}</strong>: no longer in the server\'s catalogue', since
        )

    @admin.display(description="try")
    def try_column(self, obj: McpTool) -> SafeString:
        refusal, hint = _why_not_tryable(obj)
        if refusal:
            # Not a bare "-": what stands in the way, the whole sentence on hover.
            return format_html(
                '<span class="nr-llm-quiet" title="{}">{}</span>', f"{refusal}. {hint}", _TRY_HINTS[refusal]
            )
        return format_html(
            '<a class="nr-llm-nowrap" href="{}">Try tool</a>',
            reverse("admin:nr_llm_mcptool_try", args=[obj.pk]),
        )

    @admin.display(description="try tool")
    def try_state(self, obj: McpTool) -> SafeString | str:
        refusal, hint = _why_not_tryable(obj)
        if refusal:
            return f"Not available: {refusal}. {hint}"
        return format_html('<a href="{}">Try tool</a>', reverse("admin:nr_llm_mcptool_try", args=[obj.pk]))

    @admin.display(description="input schema")
    def schema_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.input_schema)

    @admin.display(description="OpenAI strict mode")
    def strict_column(self, obj: McpTool) -> str:
        # The same verdict definitions(strict=True) reaches, so an operator sees why a tool is
        # offered non-strict without reading the log (escaped: the reason quotes remote names).
        reason = strict_reason(obj.input_schema)
        return f"not strict: {reason}" if reason else "strict (definitions(..., strict=True) offers it so)"

    @admin.display(description="remote annotations")
    def annotations_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.remote_annotations)

    def get_fields(self, request: HttpRequest, obj: McpTool | None = None) -> Any:
        # The change review only where there is one to read.
        fields = list(super().get_fields(request, obj))
        if obj is None or not obj.awaiting_review:
            fields.remove("definition_review")
        return fields

    def save_model(self, request: HttpRequest, obj: McpTool, form: Any, change: bool) -> None:
        # Only "enabled" is editable, and it is switched through the catalogue's service (under
        # the server's lock, re-pinning the definition), never by saving a row read earlier,
        # which could write back a definition an import has replaced meanwhile.
        if "enabled" not in form.changed_data:
            return
        if not obj.enabled:
            catalogue.disable_tools([obj.pk])
            return
        if refusal := catalogue.accept_definition(obj.pk, form.cleaned_data["reviewed_fingerprint"]):
            self.message_user(request, f"{obj.tool_name} was not enabled: {refusal}.", messages.ERROR)

    @admin.display(description="state", ordering="orphaned")
    def state_column(self, obj: McpTool) -> SafeString | str:
        if obj.awaiting_review:
            return format_html(
                '<strong class="nr-llm-warning" title="{}">DEFINITION CHANGED</strong>'
                '<div class="nr-llm-detail">disabled {}</div>',
                f"{DEFINITION_CHANGED}: open the tool to read what changed",
                f"{obj.disabled_at:%Y-%m-%d %H:%M}" if obj.disabled_at else "by an import",
            )
        return self.orphan_column(obj)

    @admin.display(description="definition changed")
    def definition_review(self, obj: McpTool) -> SafeString:
        """What the server changed since the tool was enabled: each part as enabled, beside it now."""
        old, new = catalogue.review(obj)
        parts = catalogue.changed_parts(old, new)
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            ((catalogue.PARTS[part], _shown(old.get(part)), _shown(new.get(part))) for part in parts),
        )
        when = f" on {obj.disabled_at:%Y-%m-%d %H:%M}" if obj.disabled_at else ""
        return format_html(
            '<p><strong class="nr-llm-warning">Disabled by an import{}: its {}.</strong> A model is not '
            "offered it until you accept the change: read it, then tick Enabled and save (the definition "
            "shown as now becomes the one enabled).</p>"
            '<table class="nr-llm-review"><thead><tr><th>part</th><th>as enabled</th><th>now</th></tr>'
            "</thead><tbody>{}</tbody></table>",
            when,
            DEFINITION_CHANGED,
            rows
            or format_html(
                '<tr><td colspan="3">{}</td></tr>', "no difference now: the server changed it back"
            ),
        )

    @admin.display(description="output schema")
    def output_schema_column(self, obj: McpTool) -> SafeString:
        return columns.pretty_json(obj.output_schema)

    @admin.action(description="Enable selected tools", permissions=["change"])
    def enable_tools(self, request: HttpRequest, queryset: QuerySet[McpTool]) -> None:
        # An orphan is gone from its server: enabling it would only offer a model a tool that
        # fails. A changed definition is accepted on the tool's own page, where it can be read.
        done = catalogue.enable_tools(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done.count} tool(s) enabled.")
        if done.orphaned:
            self.message_user(
                request,
                f"{done.orphaned} orphaned tool(s) left disabled: they are gone from their server.",
                messages.WARNING,
            )
        if done.to_review:
            self.message_user(
                request,
                f"{len(done.to_review)} tool(s) left disabled because their definition changed since "
                f"they were enabled: {', '.join(done.to_review)}. Open each to read what changed and "
                "enable it there.",
                messages.WARNING,
            )

    @admin.action(description="Disable selected tools", permissions=["change"])
    def disable_tools(self, request: HttpRequest, queryset: QuerySet[McpTool]) -> None:
        done = catalogue.disable_tools(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{done.count} tool(s) disabled.")


def _shown(value: Any) -> SafeString:
    """One part of a definition for reading: text as text, JSON pretty-printed."""
    if isinstance(value, str):
        if not value:
            return SafeString("<em>empty</em>")
        return format_html('<div class="nr-llm-error-text">{}</div>', value)
    return columns.pretty_json(value if value is not None else {})


_ORPHANED = "it is orphaned (gone from its server's catalogue)"
_CHANGED = f"its {DEFINITION_CHANGED}"
_NOT_ENABLED = "it is not enabled"
_SERVER_DISABLED = "its server is not enabled"
#: What the Try column says instead of a link: short, the whole reason in its title.
_TRY_HINTS = {
    _ORPHANED: "orphaned",
    _CHANGED: "review the change",
    _NOT_ENABLED: "enable it first",
    _SERVER_DISABLED: "server disabled",
}
#: A description in the tool list: one line's worth; the page holds the rest.
DESCRIPTION_CHARS = 70


def _untryable(tool: McpTool) -> str:
    """Why ``tool`` cannot be tried, or "" when it can."""
    return _why_not_tryable(tool)[0]


def _why_not_tryable(tool: McpTool) -> tuple[str, str]:
    """(why ``tool`` cannot be tried, what the operator can do about it); ("", "") when it can."""
    if tool.orphaned:
        return (
            _ORPHANED,
            "Import the server's catalogue again; if the server offers it again, it can be tried.",
        )
    if tool.awaiting_review:
        return _CHANGED, "Read what changed on the tool's page; tick Enabled and save to accept it."
    if not tool.enabled:
        return _NOT_ENABLED, "A tool must be enabled to try it: tick Enabled and save."
    if not tool.server.enabled:
        return _SERVER_DISABLED, "Enable its MCP server first."
    return "", ""
