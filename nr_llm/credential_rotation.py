"""Re-encrypt every stored credential under the first configured key."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from . import credentials
from .models import McpServer


@dataclass(frozen=True)
class RotationReport:
    rotated: int
    unreadable: tuple[str, ...]


def rotate_stored_credentials() -> RotationReport:
    rotated = 0
    unreadable: list[str] = []
    with transaction.atomic():
        for server in McpServer.objects.select_for_update().exclude(credential_ciphertext=""):
            try:
                token = credentials.rotate(server.credential_ciphertext)
            except credentials.CredentialUnavailable:
                # Leave it as it is: a token no key reads is not made worse by waiting
                # for the operator to bring the old key back.
                unreadable.append(server.identifier)
                continue
            McpServer.objects.filter(pk=server.pk).update(credential_ciphertext=token)
            rotated += 1
    return RotationReport(rotated=rotated, unreadable=tuple(unreadable))
