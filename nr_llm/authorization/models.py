"""OAuth grants, apart from ``McpServer`` because the admin's form saves a whole row and would
write back a refresh token another worker has since rotated; only the store writes them."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GrantFields(models.Model):
    """Tokens (encrypted), expiry, scopes, and what they are pinned to (see ``oauth.store.Grant``)."""

    access_token_ciphertext = models.TextField(blank=True)
    refresh_token_ciphertext = models.TextField(blank=True)
    # Encrypted: it may hold a dynamically registered client secret.
    registration_ciphertext = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    granted_scopes = models.CharField(max_length=1000, blank=True)
    grant_type = models.CharField(max_length=32, blank=True)
    issuer = models.CharField(max_length=2048, blank=True)
    token_endpoint = models.CharField(max_length=2048, blank=True)
    resource = models.CharField(max_length=2048, blank=True)
    mcp_url = models.CharField(max_length=2048, blank=True)
    resource_metadata = models.CharField(max_length=2048, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    # Set when a call found the grant unusable without a person; cleared by a new Connect.
    attention_reason = models.CharField(max_length=32, blank=True)
    attention_scopes = models.CharField(max_length=1000, blank=True)
    attention_since = models.DateTimeField(null=True, blank=True)
    # A DPoP key (RFC 9449) is as secret as the token bound to it.
    token_type = models.CharField(max_length=16, blank=True)
    dpop_key_ciphertext = models.TextField(blank=True)

    class Meta:
        abstract = True

    @property
    def has_tokens(self) -> bool:
        return bool(self.access_token_ciphertext)


class OAuthGrantRecord(GrantFields):
    """The shared grant of one server (mode "shared")."""

    server = models.OneToOneField("nr_llm.McpServer", on_delete=models.CASCADE, related_name="oauth_grant")

    class Meta:
        verbose_name = "OAuth grant"

    def __str__(self) -> str:
        return f"OAuth grant of server #{self.server_id}"

    def __repr__(self) -> str:
        return f"<OAuthGrantRecord server={self.server_id} connected={self.has_tokens}>"


class UserGrantRecord(GrantFields):
    """One user's own grant of a per-user server: deleted with the user or the server."""

    server = models.ForeignKey("nr_llm.McpServer", on_delete=models.CASCADE, related_name="user_grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")

    class Meta:
        verbose_name = "per-user OAuth grant"
        constraints = [models.UniqueConstraint(fields=["server", "user"], name="nr_llm_user_grant_unique")]

    def __str__(self) -> str:
        return f"OAuth grant of user #{self.user_id} at server #{self.server_id}"

    def __repr__(self) -> str:
        return f"<UserGrantRecord server={self.server_id} user={self.user_id} connected={self.has_tokens}>"


class PendingAuthorization(models.Model):
    """One Connect between the redirect and its callback, found by a hash of ``state`` so the
    state itself is stored only encrypted; deleted when used, ignored once old."""

    state_digest = models.CharField(max_length=64, unique=True)
    server = models.ForeignKey("nr_llm.McpServer", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    payload_ciphertext = models.TextField()
    created = models.DateTimeField()
    for_user = models.BooleanField(default=False)

    class Meta:
        verbose_name = "pending OAuth authorization"

    def __repr__(self) -> str:
        return f"<PendingAuthorization server={self.server_id} user={self.user_id}>"
