"""Re-encrypt every stored credential under the first configured key.

Covers the static credential, the OAuth client secret and private key of each server,
each server's OAuth grant (tokens and client registration), pending authorizations, and the
tool-call ledger's arguments and answer previews.

The small tables are rotated in one transaction, rows locked, so a refresh committing
meanwhile is waited for, never overwritten with the token it replaced. The ledger may hold
millions of rows: it goes in batches of ``LEDGER_BATCH_ROWS``, each locked and committed on
its own, in (created, id) order, so no lock is held for long and a failure rolls back one
batch. A token already under the first key is left as it is: a run that was interrupted is
simply run again and writes only what is left. Rows written while it runs come after the
rows already done in that order, so the walk reaches them before it ends (a process still
configured with the old key first writes old tokens: deploy the new keys first).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models, transaction
from django.db.models import Q

from ..models import McpServer, OAuthGrantRecord, PendingAuthorization, ToolCall
from . import credentials

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
]
_LEDGER_FIELDS = ("arguments_ciphertext", "result_preview_ciphertext")
LEDGER_BATCH_ROWS = 500
#: Unreadable ledger rows named in the report at most (the rest are counted).
NAMED_AT_MOST = 20


@dataclass(frozen=True)
class RotationReport:
    rotated: int
    unreadable: tuple[str, ...]
    ledger_batches: int = 0


def rotate_stored_credentials(*, ledger_batch_rows: int = LEDGER_BATCH_ROWS) -> RotationReport:
    rotated = 0
    unreadable: list[str] = []
    with transaction.atomic():
        for model, fields, name in _ENCRYPTED:
            for row in model._default_manager.select_for_update().order_by("pk"):
                changes, failed = _rotated(row, fields)
                for field in failed:
                    label = model._default_manager.filter(pk=row.pk).values_list(name, flat=True).first()
                    unreadable.append(f"{label} ({_field_label(field)})")
                if changes:
                    model._default_manager.filter(pk=row.pk).update(**changes)
                    rotated += len(changes)
    ledger_rotated, ledger_unreadable, batches = _rotate_ledger(ledger_batch_rows)
    named = [f"tool call {pk} ({_field_label(field)})" for pk, field in ledger_unreadable[:NAMED_AT_MOST]]
    if len(ledger_unreadable) > NAMED_AT_MOST:
        named.append(f"{len(ledger_unreadable) - NAMED_AT_MOST} more tool-call fields")
    return RotationReport(
        rotated=rotated + ledger_rotated, unreadable=(*unreadable, *named), ledger_batches=batches
    )


def _rotate_ledger(batch_rows: int) -> tuple[int, list[tuple[Any, str]], int]:
    """The ledger in short batches; (tokens rotated, unreadable (pk, field), batches)."""
    rotated = 0
    unreadable: list[tuple[Any, str]] = []
    batches = 0
    after: tuple[datetime, Any] | None = None
    while True:
        with transaction.atomic():
            rows = ToolCall.objects.select_for_update().order_by("created", "id")
            if after is not None:
                rows = rows.filter(Q(created__gt=after[0]) | Q(created=after[0], id__gt=after[1]))
            batch = list(rows.only("id", "created", *_LEDGER_FIELDS)[:batch_rows])
            for row in batch:
                changes, failed = _rotated(row, _LEDGER_FIELDS)
                unreadable.extend((row.pk, field) for field in failed)
                if changes:
                    ToolCall.objects.filter(pk=row.pk).update(**changes)
                    rotated += len(changes)
        if not batch:
            return rotated, unreadable, batches
        batches += 1
        after = (batch[-1].created, batch[-1].pk)


def _rotated(row: models.Model, fields: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """The row's tokens re-encrypted (those not already under the first key), and the unreadable."""
    changes: dict[str, str] = {}
    failed: list[str] = []
    for field in fields:
        token = getattr(row, field)
        if not token or credentials.is_current(token):
            continue
        try:
            changes[field] = credentials.rotate(token)
        except credentials.CredentialUnavailable:
            # Leave it as it is: a token no key reads is not made worse by waiting for the
            # operator to bring the old key back.
            failed.append(field)
    return changes, failed


def _field_label(field: str) -> str:
    return field.removesuffix("_ciphertext").replace("_", " ")
