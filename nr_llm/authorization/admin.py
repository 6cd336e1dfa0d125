"""The per-user grants in the admin: listed per server and per user, revocable by an operator.

Read-only: a grant is made by its user's Connect only. Nothing of a token is ever shown (the
ciphertext columns are not among the fields); "Revoke and forget" revokes at the authorization
server where it advertises revocation, then deletes the row, as the user's own Disconnect does.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from ..models import UserGrantRecord
from . import service
from .columns import REASONS


@admin.register(UserGrantRecord)
class UserGrantRecordAdmin(admin.ModelAdmin[UserGrantRecord]):
    list_display = ["server", "user", "state", "granted_scopes", "connected_at", "expires_at"]
    list_filter = ["server"]
    list_select_related = ["server", "user"]
    search_fields = ["server__identifier", "user__username"]
    # Never a ciphertext column: the page shows who, what and since when, nothing of a token.
    SHOWN = ("server", "user", "state", "granted_scopes", "connected_at", "expires_at", "token_type")
    fields = SHOWN
    readonly_fields = SHOWN
    actions = ["revoke_action"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="state")
    def state(self, obj: UserGrantRecord) -> str:
        if not obj.has_tokens:
            return "not connected"
        if obj.attention_reason:
            return f"needs reconnect: {REASONS.get(obj.attention_reason, obj.attention_reason)}"
        return "connected"

    @admin.action(description="Revoke and forget the selected grants", permissions=["delete"])
    def revoke_action(self, request: HttpRequest, queryset: QuerySet[UserGrantRecord]) -> None:
        revoked = forgotten = 0
        for record in queryset.select_related("server"):
            outcome = service.disconnect(record.server, record.user_id)
            revoked += outcome.revoked
            forgotten += 1
        self.message_user(
            request,
            f"{forgotten} grant(s) forgotten, {revoked} revoked at their authorization server.",
            messages.SUCCESS,
        )
