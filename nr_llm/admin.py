"""The operator surface. Thin: actions call services and report with message_user."""

from __future__ import annotations

from django.contrib import admin

from .forms import McpServerForm
from .models import McpServer, McpTool


@admin.register(McpServer)
class McpServerAdmin(admin.ModelAdmin[McpServer]):
    form = McpServerForm
    list_display = ["name", "identifier", "enabled", "data_class", "requires_approval", "import_status"]
    list_filter = ["enabled", "import_status", "data_class"]
    search_fields = ["identifier", "name", "url"]
    readonly_fields = [
        "credential_state",
        "import_status",
        "import_error",
        "last_imported",
        "tool_count",
        "last_contact",
        "last_latency_ms",
        "created",
        "updated",
    ]
    fieldsets = [
        (None, {"fields": ["identifier", "name", "description", "url", "enabled"]}),
        ("Policy", {"fields": ["data_class", "requires_approval", "operation_timeout"]}),
        (
            "Authentication",
            {
                "fields": [
                    "auth_placement",
                    "auth_header_name",
                    "credential_state",
                    "new_credential",
                    "clear_credential",
                    "credential_env",
                ]
            },
        ),
        (
            "Observed",
            {
                "fields": [
                    "import_status",
                    "import_error",
                    "last_imported",
                    "tool_count",
                    "last_contact",
                    "last_latency_ms",
                    "created",
                    "updated",
                ]
            },
        ),
    ]

    @admin.display(description="Stored credential")
    def credential_state(self, obj: McpServer) -> str:
        if obj.credential_ciphertext:
            return "set"
        if obj.credential_env:
            return f"from environment variable {obj.credential_env}"
        return "not set"


@admin.register(McpTool)
class McpToolAdmin(admin.ModelAdmin[McpTool]):
    list_display = ["tool_name", "server", "remote_name", "enabled", "orphaned"]
    list_filter = ["enabled", "orphaned", "server"]
    search_fields = ["tool_name", "remote_name", "description"]
    readonly_fields = [
        "server",
        "tool_name",
        "remote_name",
        "description",
        "input_schema",
        "remote_annotations",
        "orphaned",
        "orphaned_at",
        "created",
        "updated",
    ]
