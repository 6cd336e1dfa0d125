"""The app's shared vocabulary: the choices its models store and its settings name.

A module both sides import: ``conf`` and ``checks`` read a setting against these values, the
models store them, the services and admin compare with them. It imports nothing of the app
(only ``django.db.models`` for ``TextChoices``, which needs no app registry), so nothing
that imports it can close a circle. ``nr_llm.models`` re-exports every name.
"""

from __future__ import annotations

from django.db import models

__all__ = [
    "AuthPlacement",
    "DataClass",
    "ImportStatus",
    "ImportTaskState",
    "OAuthGrantType",
    "OAuthMode",
    "OAuthRegistration",
]


class AuthPlacement(models.TextChoices):
    NONE = "none", "None"
    BEARER = "bearer", "Authorization: Bearer"
    HEADER = "header", "Named header"
    OAUTH = "oauth", "OAuth 2.1"


class OAuthGrantType(models.TextChoices):
    AUTHORIZATION_CODE = "authorization_code", "Authorization code (an operator connects once)"
    CLIENT_CREDENTIALS = "client_credentials", "Client credentials (no operator step)"
    # Obtained inside an operation with no person, from an assertion another party signs.
    ENTERPRISE = "enterprise", "Enterprise-managed (the user's identity provider vouches: ID-JAG)"
    WORKLOAD = "workload", "Workload identity federation (a JWT the platform mounts)"


class OAuthMode(models.TextChoices):
    """Whose account a call acts as on an OAuth server (the operator chooses per server)."""

    SHARED = "shared", "Shared (one grant, connected by an operator; every user acts through it)"
    PER_USER = "per_user", "Per user (each user of the site connects their own account)"


class OAuthRegistration(models.TextChoices):
    PREREGISTERED = "preregistered", "Pre-registered client (id + secret or private key)"
    DYNAMIC = "dynamic", "Dynamic client registration"
    METADATA_DOCUMENT = "metadata_document", "Client ID metadata document (served by this site)"


class DataClass(models.TextChoices):
    PUBLIC_CONTENT = "publicContent", "Public content"
    EDITOR_CONTENT = "editorContent", "Editor content"
    SOURCE_CODE = "sourceCode", "Source code"
    INTERNAL_CONFIGURATION = "internalConfiguration", "Internal configuration"
    SYSTEM_DIAGNOSTICS = "systemDiagnostics", "System diagnostics"
    SECRET_ADJACENT = "secretAdjacent", "Secret-adjacent"


class ImportStatus(models.TextChoices):
    # The outcome of the last import that finished. Whether one is waiting or running is
    # ImportTaskState, kept apart so the last outcome stays readable meanwhile.
    NEVER_IMPORTED = "never_imported", "Never imported"
    OK = "ok", "OK"
    PARTIAL = "partial", "Partial"
    ERROR = "error", "Error"


class ImportTaskState(models.TextChoices):
    # A crashed worker cannot clear "running"; import_state.py reads a run older than its
    # budget allows as stalled instead of trusting it (no heartbeat exists to do better).
    IDLE = "idle", "Idle"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
