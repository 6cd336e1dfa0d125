"""What an OAuth-protected server's authorization leaves in the database.

Kept apart from ``McpServer`` on purpose: the admin's change form saves a whole server
row, and a row it read before another worker rotated the refresh token would write the
spent token back. These rows are written only by the store and the Connect service,
field by field (``update``), never by a form.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GrantFields(models.Model):
    """What a grant keeps: tokens (encrypted), expiry, scopes, and what they are pinned to."""

    # Fernet tokens (credentials.py); empty when there is none.
    access_token_ciphertext = models.TextField(blank=True)
    refresh_token_ciphertext = models.TextField(blank=True)
    # The client registration the grant was obtained with (JSON, encrypted: it may hold
    # a dynamically registered client secret).
    registration_ciphertext = models.TextField(blank=True)
    # Absolute, so a grant read after a restart still knows when it ends.
    expires_at = models.DateTimeField(null=True, blank=True)
    granted_scopes = models.CharField(max_length=1000, blank=True)
    grant_type = models.CharField(max_length=32, blank=True)
    # Pinned when the server was authorized: refresh token and client secret go there only.
    issuer = models.CharField(max_length=2048, blank=True)
    token_endpoint = models.CharField(max_length=2048, blank=True)
    resource = models.CharField(max_length=2048, blank=True)
    # The server URL the grant was issued for: used for any other URL it is set aside.
    mcp_url = models.CharField(max_length=2048, blank=True)
    # Where the protected resource metadata was found (often named only by a challenge).
    resource_metadata = models.CharField(max_length=2048, blank=True)
    connected_at = models.DateTimeField(null=True, blank=True)
    # Set when a call found the grant unusable without a person; cleared by a new Connect.
    attention_reason = models.CharField(max_length=32, blank=True)
    attention_scopes = models.CharField(max_length=1000, blank=True)
    attention_since = models.DateTimeField(null=True, blank=True)
    # "DPoP" for a token bound to the grant's own key (RFC 9449), whose PEM is kept encrypted
    # beside the tokens: the token is worthless without it, and both are as secret.
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
        # Never the ciphertexts: they are harmless without the key, but nothing reads them.
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
    """One Connect between the redirect to the authorization server and its callback.

    Looked up by a hash of ``state`` (the state itself is only in the browser's URL and,
    encrypted, in ``payload_ciphertext`` with the PKCE verifier). Bound to the staff user
    who pressed Connect and to the server; deleted when used, and ignored once old.
    """

    state_digest = models.CharField(max_length=64, unique=True)
    server = models.ForeignKey("nr_llm.McpServer", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    payload_ciphertext = models.TextField()
    created = models.DateTimeField()
    # A user connecting their own account (per-user server), not an operator in the admin.
    for_user = models.BooleanField(default=False)

    class Meta:
        verbose_name = "pending OAuth authorization"

    def __repr__(self) -> str:
        return f"<PendingAuthorization server={self.server_id} user={self.user_id}>"
