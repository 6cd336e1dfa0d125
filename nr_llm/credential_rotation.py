"""Re-encrypt every stored credential under the first configured key.

Covers the static credential, the OAuth client secret and private key of each server,
each server's OAuth grant (tokens and client registration), pending authorizations, and the
tool-call ledger's arguments and answer previews.
Rows are locked while rotated, so a refresh committing meanwhile is waited for, never
overwritten with the token it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import models, transaction

from . import credentials
from .models import McpServer, OAuthGrantRecord, PendingAuthorization, ToolCall

# Per model: the encrypted fields, and how a row is named in the report.
_ENCRYPTED: list[tuple[type[models.Model], tuple[str, ...], str]] = [
    (
        McpServer,
        ("credential_ciphertext", "oauth_client_secret_ciphertext", "oauth_private_key_ciphertext"),
        "identifier",
    ),
    (
        OAuthGrantRecord,
        ("access_token_ciphertext", "refresh_token_ciphertext", "registration_ciphertext"),
        "server__identifier",
    ),
    (PendingAuthorization, ("payload_ciphertext",), "server__identifier"),
    (ToolCall, ("arguments_ciphertext", "result_preview_ciphertext"), "id"),
]


@dataclass(frozen=True)
class RotationReport:
    rotated: int
    unreadable: tuple[str, ...]


def rotate_stored_credentials() -> RotationReport:
    rotated = 0
    unreadable: list[str] = []
    with transaction.atomic():
        for model, fields, name in _ENCRYPTED:
            for row in model._default_manager.select_for_update().order_by("pk"):
                changes: dict[str, str] = {}
                for field in fields:
                    token = getattr(row, field)
                    if not token:
                        continue
                    try:
                        changes[field] = credentials.rotate(token)
                    except credentials.CredentialUnavailable:
                        # Leave it as it is: a token no key reads is not made worse by waiting
                        # for the operator to bring the old key back.
                        label = model._default_manager.filter(pk=row.pk).values_list(name, flat=True).first()
                        unreadable.append(f"{label} ({field.removesuffix('_ciphertext').replace('_', ' ')})")
                if changes:
                    model._default_manager.filter(pk=row.pk).update(**changes)
                    rotated += len(changes)
    return RotationReport(rotated=rotated, unreadable=tuple(unreadable))
