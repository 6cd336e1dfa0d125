"""A server's authorization state in words, for the changelist and the change page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..models import McpServer, OAuthGrantRecord, OAuthGrantType

REASONS = {
    "not_authorized": "not connected yet",
    "refresh_refused": "the authorization server refused to renew the grant",
    "insufficient_scope": "the server asks for more scopes",
    "server_changed": "the server now names another authorization server",
    "attempts_exhausted": "repeated authorizations did not satisfy the server",
}


@dataclass(frozen=True)
class AuthorizationState:
    text: str
    attention: bool


def state(server: McpServer, record: OAuthGrantRecord | None, now: datetime) -> AuthorizationState:
    """What an operator must know: connected until when, or what is wrong and which scopes."""
    code_grant = server.oauth_grant_type == OAuthGrantType.AUTHORIZATION_CODE
    if record is not None and record.attention_reason not in ("", "not_authorized"):
        reason = record.attention_reason
        scopes = f" (scopes: {record.attention_scopes})" if record.attention_scopes else ""
        return AuthorizationState(f"needs reconnect: {REASONS.get(reason, reason)}{scopes}", True)
    if record is None or not record.has_tokens:
        # Never connected (or disconnected): nothing to reconnect yet, whatever a call found.
        if code_grant:
            return AuthorizationState(REASONS["not_authorized"], True)
        return AuthorizationState("client credentials, no token yet", False)
    if not code_grant:
        return AuthorizationState("client credentials OK", False)
    if record.expires_at is None:
        return AuthorizationState("connected", False)
    until = f"{record.expires_at:%Y-%m-%d %H:%M} UTC"
    if record.expires_at <= now and not record.refresh_token_ciphertext:
        return AuthorizationState(f"needs reconnect: expired {until}, no refresh token", True)
    renew = ", renews itself" if record.refresh_token_ciphertext else ""
    return AuthorizationState(f"connected until {until}{renew}", False)


def cell(server: McpServer, record: OAuthGrantRecord | None, now: datetime) -> SafeString:
    found = state(server, record, now)
    if found.attention:
        return format_html('<strong class="nr-llm-warning">{}</strong>', found.text)
    return format_html("{}", found.text)


def needs_attention() -> Q:
    """Servers on OAuth whose grant cannot be used without an operator."""
    oauth = Q(auth_placement="oauth")
    flagged = ~Q(oauth_grant__attention_reason="") & Q(oauth_grant__isnull=False)
    not_connected = Q(oauth_grant_type=OAuthGrantType.AUTHORIZATION_CODE) & (
        Q(oauth_grant__isnull=True) | Q(oauth_grant__access_token_ciphertext="")
    )
    return oauth & (flagged | not_connected)
