"""A server's authorization state in words, for the changelist and the change page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Q
from django.utils.html import format_html
from django.utils.safestring import SafeString

from ..mcp.oauth import issued_for
from ..models import McpServer, OAuthGrantRecord, OAuthGrantType, OAuthRegistration

REASONS = {
    "not_authorized": "not connected yet",
    "refresh_refused": "the authorization server refused to renew the grant",
    "insufficient_scope": "the server asks for more scopes",
    "server_changed": "the server now names another authorization server",
    "url_changed": "the URL changed",
    "attempts_exhausted": "repeated authorizations did not satisfy the server",
    "issuer_not_configured": "its pre-registered client names no authorization server (issuer)",
}
WITHOUT_PERSON: dict[str, str] = {
    OAuthGrantType.CLIENT_CREDENTIALS: "client credentials",
    OAuthGrantType.WORKLOAD: "workload identity",
    OAuthGrantType.ENTERPRISE: "enterprise-managed, per user",
}
# Fixed by editing the server, not by a Connect.
CONFIGURATION = frozenset({"issuer_not_configured"})
NO_ISSUER = "needs configuration: enter the authorization server (issuer) of its pre-registered client"


@dataclass(frozen=True)
class AuthorizationState:
    text: str
    attention: bool


def state(server: McpServer, record: OAuthGrantRecord | None, now: datetime) -> AuthorizationState:
    """What an operator must know: connected until when, or what is wrong and which scopes."""
    code_grant = server.oauth_grant_type == OAuthGrantType.AUTHORIZATION_CODE
    if server.oauth_registration == OAuthRegistration.PREREGISTERED and not server.oauth_issuer:
        return AuthorizationState(NO_ISSUER, True)
    if record is not None and record.has_tokens and not _issued_for(record, server):
        # Checked here, not only when a call finds it: the edit itself sets the grant aside.
        return AuthorizationState(f"needs reconnect: {REASONS['url_changed']}", True)
    if record is not None and record.attention_reason not in ("", "not_authorized", *CONFIGURATION):
        reason = record.attention_reason
        scopes = f" (scopes: {record.attention_scopes})" if record.attention_scopes else ""
        return AuthorizationState(f"needs reconnect: {REASONS.get(reason, reason)}{scopes}", True)
    # How a grant obtained with no person is named (client credentials, workload identity...).
    obtained = WITHOUT_PERSON.get(server.oauth_grant_type, "client credentials")
    if record is None or not record.has_tokens:
        # Never connected (or disconnected): nothing to reconnect yet, whatever a call found.
        if code_grant:
            return AuthorizationState(REASONS["not_authorized"], True)
        return AuthorizationState(f"{obtained}, no token yet", False)
    if not code_grant:
        return AuthorizationState(f"{obtained} OK", False)
    if record.expires_at is None:
        return AuthorizationState("connected", False)
    until = f"{record.expires_at:%Y-%m-%d %H:%M} UTC"
    if record.expires_at <= now and not record.refresh_token_ciphertext:
        return AuthorizationState(f"needs reconnect: expired {until}, no refresh token", True)
    renew = ", renews itself" if record.refresh_token_ciphertext else ""
    return AuthorizationState(f"connected until {until}{renew}", False)


def _issued_for(record: OAuthGrantRecord, server: McpServer) -> bool:
    return issued_for(record.mcp_url, record.resource, server.url)


def cell(server: McpServer, record: OAuthGrantRecord | None, now: datetime) -> SafeString:
    found = state(server, record, now)
    if found.attention:
        return format_html('<strong class="nr-llm-warning">{}</strong>', found.text)
    return format_html("{}", found.text)


def needs_attention() -> Q:
    """Servers on OAuth whose grant cannot be used without an operator."""
    oauth = Q(auth_placement="oauth")
    flagged = (
        ~Q(oauth_grant__attention_reason="")
        & ~Q(oauth_grant__attention_reason__in=CONFIGURATION)
        & Q(oauth_grant__isnull=False)
    )
    not_connected = Q(oauth_grant_type=OAuthGrantType.AUTHORIZATION_CODE) & (
        Q(oauth_grant__isnull=True) | Q(oauth_grant__access_token_ciphertext="")
    )
    # A grant recorded for another URL (one recorded before URLs were is judged by state()).
    moved = Q(oauth_grant__mcp_url__gt="") & ~Q(oauth_grant__mcp_url=F("url"))
    no_issuer = Q(oauth_registration=OAuthRegistration.PREREGISTERED, oauth_issuer="")
    return oauth & (flagged | not_connected | moved | no_issuer)
