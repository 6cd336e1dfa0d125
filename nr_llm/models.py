"""Every model of the app, for Django and its migrations (app_label ``nr_llm``): the tool row
here, the rest from the package of its concern (servers/, authorization/, governance/).

Persistence only: no network I/O here (services in catalogue/, tools/, servers/)."""

from __future__ import annotations

from typing import Any

from django.db import models

from . import vocabulary
from .servers.models import McpServer

# The choices are defined in vocabulary.py (conf and checks read them too); named here as well,
# where they were first defined.
AuthPlacement = vocabulary.AuthPlacement
DataClass = vocabulary.DataClass
ImportStatus = vocabulary.ImportStatus
ImportTaskState = vocabulary.ImportTaskState
OAuthGrantType = vocabulary.OAuthGrantType
OAuthMode = vocabulary.OAuthMode
OAuthRegistration = vocabulary.OAuthRegistration

#: Why an import disabled an enabled tool (catalogue.py); the admin and ``execute`` say it.
DEFINITION_CHANGED = "definition changed since it was enabled"


def tool_definition(
    title: str, description: str, input_schema: Any, output_schema: Any, annotations: Any
) -> dict[str, Any]:
    """A tool's definition keyed as MCP names its parts: a stored row and a fresh import compare equal."""
    return {
        "title": title,
        "description": description,
        "inputSchema": input_schema,
        "outputSchema": output_schema,
        "annotations": annotations,
    }


class McpTool(models.Model):
    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    tool_name = models.CharField(max_length=64, unique=True)
    remote_name = models.CharField(max_length=255)
    # The definition as the last import stored it: what a model reads and an operator enables.
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict)
    output_schema = models.JSONField(default=dict, blank=True)
    remote_annotations = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=False)
    run_alone = models.BooleanField(
        default=False,
        help_text="Run after a turn's other calls, one at a time: for a tool that must not run "
        "beside others. Across the site it never runs beside itself, nor beside any call of its "
        "server when the server has calls at once set or runs its writes alone.",
    )
    orphaned = models.BooleanField(default=False)
    orphaned_at = models.DateTimeField(null=True, blank=True)
    # The tool's listed ``execution.taskSupport`` ("forbidden", "optional", "required"; "" when
    # not listed): how a call is delivered, not what the tool does, so it is kept outside the
    # pinned definition and a server that starts offering tasks does not disable the tool.
    task_support = models.CharField(max_length=16, blank=True, editable=False)
    # SHA-256 of that definition, and the definition (with its fingerprint) an operator last
    # enabled, or that a disabled tool last imported: a tool is offered only while the two
    # fingerprints agree, so a server cannot change what an enabled tool says unreviewed.
    definition_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    pinned_definition = models.JSONField(default=dict, blank=True, editable=False)
    pinned_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    # What the server sent, each part as sent (or its digest, when too large or unstorable): pins
    # and fingerprints are of this, so a change in how this package normalises is never taken
    # for a change by the server. False: the pin was made under the first schema rule (before
    # migration 0007) and holds what that rule kept (catalogue._pin recognises it).
    raw_definition = models.JSONField(default=dict, blank=True, editable=False)
    pinned_raw = models.BooleanField(default=True, editable=False)
    # Set by an import that disabled the tool (DEFINITION_CHANGED); cleared by enabling it.
    disabled_reason = models.CharField(max_length=100, blank=True, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server", "tool_name"]
        verbose_name = "MCP tool"

    def __str__(self) -> str:
        return self.tool_name

    @property
    def definition(self) -> dict[str, Any]:
        """The stored definition, keyed as MCP names its parts (what the fingerprint covers)."""
        return tool_definition(
            self.title, self.description, self.input_schema, self.output_schema, self.remote_annotations
        )

    @property
    def awaiting_review(self) -> bool:
        """Its definition changed while it was enabled, and no operator has accepted the change."""
        return self.disabled_reason == DEFINITION_CHANGED


class FeatureKind(models.TextChoices):
    RESOURCE = "resource", "Resource"
    TEMPLATE = "template", "Resource template"
    PROMPT = "prompt", "Prompt"


def feature_definition(item: dict[str, Any]) -> dict[str, Any]:
    """What an operator enables of a resource, template or prompt: the listed object minus
    ``_meta`` (which servers fill with volatile hints), as the server sent it."""
    return {key: value for key, value in item.items() if key != "_meta"}


class McpFeature(models.Model):
    """A server's resource, resource template or prompt, imported beside its tools.

    Governed as a tool is: imported disabled, enabled one by one, offered and read only while
    enabled and its definition matches the pinned one (a changed definition disables it until
    reviewed), behind its server's data class. ``key`` is what a caller names it by: the URI,
    the URI template, or the prompt's name; ``key_digest`` keeps it unique per server on every
    database (a 2 KB URI does not fit MariaDB's index).
    """

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="features")
    kind = models.CharField(max_length=16, choices=FeatureKind.choices)
    key = models.TextField()
    key_digest = models.CharField(max_length=64, editable=False)
    name = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    mime_type = models.CharField(max_length=200, blank=True)
    definition = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=False)
    orphaned = models.BooleanField(default=False)
    orphaned_at = models.DateTimeField(null=True, blank=True)
    definition_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    pinned_definition = models.JSONField(default=dict, blank=True, editable=False)
    pinned_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    disabled_reason = models.CharField(max_length=100, blank=True, editable=False)
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server", "kind", "key_digest"]
        verbose_name = "MCP resource or prompt"
        verbose_name_plural = "MCP resources and prompts"
        constraints = [
            models.UniqueConstraint(fields=["server", "kind", "key_digest"], name="nr_llm_feature_unique_key")
        ]

    def __str__(self) -> str:
        return f"{self.server.identifier}: {self.key}" if self.server_id else self.key

    @property
    def awaiting_review(self) -> bool:
        return self.disabled_reason == DEFINITION_CHANGED

    @property
    def offered(self) -> bool:
        """Enabled, present, and saying what the operator enabled."""
        return self.enabled and not self.orphaned and self.definition_fingerprint == self.pinned_fingerprint


# Registered with this app from their own package (ARCHITECTURE.md, "Growing").
from .authorization.models import OAuthGrantRecord, PendingAuthorization, UserGrantRecord  # noqa: E402
from .governance.models import CallLease, ToolCall, ToolCallApproval, ToolCallStatus  # noqa: E402

__all__ = [
    "DEFINITION_CHANGED",
    "CallLease",
    "AuthPlacement",
    "DataClass",
    "FeatureKind",
    "McpFeature",
    "ImportStatus",
    "ImportTaskState",
    "McpServer",
    "McpTool",
    "OAuthGrantRecord",
    "OAuthGrantType",
    "OAuthMode",
    "OAuthRegistration",
    "PendingAuthorization",
    "ToolCall",
    "ToolCallApproval",
    "ToolCallStatus",
    "UserGrantRecord",
]
