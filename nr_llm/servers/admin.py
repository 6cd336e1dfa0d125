"""The servers' admin: the connection, the catalogue and the policy of each MCP server.

Thin: actions call services and report with message_user. Admin actions are POST-only and
CSRF-protected by Django itself; each one here also requires the change permission
(``permissions=["change"]``), so a view-only operator neither sees nor can post them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from .. import admin_columns as columns
from .. import tasks
from ..authorization import columns as authorization_columns
from ..authorization import service as authorization_service
from ..authorization import views as authorization_views
from ..catalogue import admin as features_admin
from ..forms import McpServerForm
from ..governance import admin as governance_admin
from ..models import AuthPlacement, McpServer
from . import connection, readiness

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


class NeedsAttentionFilter(admin.SimpleListFilter):
    title = "authorization"
    parameter_name = "authorization"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("attention", "Needs attention")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        chosen = self.value() == "attention"
        return queryset.filter(authorization_columns.needs_attention()) if chosen else queryset


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
