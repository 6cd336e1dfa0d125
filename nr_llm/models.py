"""Persistence only: no network I/O here (services in catalogue.py, tools.py, health.py)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator, URLValidator
from django.db import models

from . import credentials
from .conf import conf

identifier_validator = RegexValidator(
    r"^[a-z0-9_]{1,32}$",
    "Use 1 to 32 lowercase letters, digits or underscores; it becomes part of every imported tool's name.",
)
header_name_validator = RegexValidator(
    r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$", "Enter a valid HTTP header name, e.g. X-Api-Key."
)
env_name_validator = RegexValidator(
    credentials.ENV_NAME_RE.pattern, "Enter an environment variable name, e.g. MCP_DEMO_TOKEN."
)


class AuthPlacement(models.TextChoices):
    NONE = "none", "None"
    BEARER = "bearer", "Authorization: Bearer"
    HEADER = "header", "Named header"


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


class McpServer(models.Model):
    identifier = models.CharField(max_length=32, unique=True, validators=[identifier_validator])
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    url = models.CharField(
        "URL",
        max_length=500,
        blank=True,
        validators=[URLValidator(schemes=["http", "https"], message="Enter an http:// or https:// URL.")],
    )
    auth_placement = models.CharField(
        "authentication", max_length=16, choices=AuthPlacement.choices, default=AuthPlacement.NONE
    )
    auth_header_name = models.CharField(
        "header name", max_length=64, blank=True, validators=[header_name_validator]
    )
    # The secret itself is never stored in clear text: either a Fernet token
    # (credentials.py) or the name of an environment variable that holds it.
    credential_ciphertext = models.TextField(blank=True, editable=False)
    credential_env = models.CharField(
        "credential environment variable",
        max_length=128,
        blank=True,
        validators=[env_name_validator],
        help_text="Alternative to storing the credential: the name of an environment variable that holds it.",
    )
    data_class = models.CharField(
        max_length=32,
        choices=DataClass.choices,
        blank=True,
        help_text="What data this server may see. Imports are refused until it is declared.",
    )
    requires_approval = models.BooleanField(default=True)
    enabled = models.BooleanField(default=False)
    operation_timeout = models.PositiveIntegerField(
        "operation budget (seconds)",
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="One budget for a whole MCP operation; empty uses NR_LLM_MCP_OPERATION_TIMEOUT.",
    )

    # Observed, never edited by an operator.
    import_status = models.CharField(
        max_length=16, choices=ImportStatus.choices, default=ImportStatus.NEVER_IMPORTED, editable=False
    )
    import_error = models.TextField(blank=True, editable=False)
    last_imported = models.DateTimeField(null=True, blank=True, editable=False)
    tool_count = models.PositiveIntegerField(default=0, editable=False)
    last_contact = models.DateTimeField(null=True, blank=True, editable=False)
    last_latency_ms = models.PositiveIntegerField("last latency (ms)", null=True, blank=True, editable=False)
    # Where the admin's latest import task is; the token tells that task's writes apart
    # from an older task's, so an earlier import finishing never clears a newer one's state.
    import_task_state = models.CharField(
        max_length=16, choices=ImportTaskState.choices, default=ImportTaskState.IDLE, editable=False
    )
    import_task_since = models.DateTimeField(null=True, blank=True, editable=False)
    import_task_token = models.CharField(max_length=32, blank=True, editable=False)

    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "identifier"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return f"{self.name} ({self.identifier})"

    def clean(self) -> None:
        super().clean()
        if self.auth_placement == AuthPlacement.HEADER and not self.auth_header_name:
            raise ValidationError({"auth_header_name": "Name the header that carries the credential."})
        if self.credential_ciphertext and self.credential_env:
            raise ValidationError(
                {"credential_env": "Use either a stored credential or an environment variable, not both."}
            )

    @property
    def budget_seconds(self) -> float:
        """This server's operation budget: its own override, else the installation's."""
        return float(self.operation_timeout) if self.operation_timeout else conf.MCP_OPERATION_TIMEOUT

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_ciphertext or self.credential_env)

    def set_credential(self, secret: str) -> None:
        self.credential_ciphertext = credentials.encrypt(secret)
        self.credential_env = ""

    def clear_credential(self) -> None:
        self.credential_ciphertext = ""
        self.credential_env = ""

    def resolve_credential(self) -> str | None:
        """The secret in clear text, or None when none is configured.

        Raises ``CredentialUnavailable`` when one is configured but cannot be read, so
        the caller fails closed instead of calling the server unauthenticated.
        """
        if self.credential_ciphertext:
            return credentials.decrypt(self.credential_ciphertext)
        if self.credential_env:
            return credentials.from_environment(self.credential_env)
        return None


class McpTool(models.Model):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    tool_name = models.CharField(max_length=64, unique=True)
    remote_name = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    remote_annotations = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=False)
    orphaned = models.BooleanField(default=False)
    orphaned_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server", "tool_name"]
        verbose_name = "MCP tool"

    def __str__(self) -> str:
        return self.tool_name
