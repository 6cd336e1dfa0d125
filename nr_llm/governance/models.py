"""The tool-call ledger: one ``ToolCall`` row per ``execute()``, written only by ``ledger.py``.

References to the server, tool and users have no constraint and no cascade: an audit row
outlives what it names (the names are copied in), and a cascade or a constraint check would
make the ledger's connection wait on a caller's own open transaction.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class ToolCallStatus(models.TextChoices):
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"
    EXPIRED = "expired", "Expired"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    QUEUED = "queued", "Queued"


#: A decision is still to be made or acted on; past ``expires_at`` the call expires.
PENDING = (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.APPROVED)


def _unconstrained(to: str, related_name: str = "+") -> models.ForeignKey:  # type: ignore[type-arg]
    # No index: nothing looks a call up by these, and each index is a write on every call.
    return models.ForeignKey(
        to,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name=related_name,
    )


class ToolCall(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created = models.DateTimeField()
    tool_name = models.CharField("tool", max_length=200)
    tool = _unconstrained("nr_llm.McpTool")
    server = _unconstrained("nr_llm.McpServer", related_name="tool_calls")
    server_identifier = models.CharField("server", max_length=32, blank=True)
    remote_name = models.CharField(max_length=255, blank=True)
    tool_description = models.TextField(blank=True)
    tool_input_schema = models.JSONField(default=dict, blank=True)
    data_class = models.CharField(max_length=32, blank=True)
    data_class_ceiling = models.CharField(max_length=32, blank=True)
    # The digest binds an approval to these exact arguments.
    arguments_ciphertext = models.TextField(blank=True)
    arguments_digest = models.CharField("arguments SHA-256", max_length=64, blank=True)
    actor_user = _unconstrained(settings.AUTH_USER_MODEL)
    actor_label = models.CharField("actor", max_length=150, blank=True)
    status = models.CharField(max_length=20, choices=ToolCallStatus.choices)
    error_kind = models.CharField(max_length=32, blank=True)
    era = models.CharField("protocol era", max_length=16, blank=True)
    duration_ms = models.PositiveIntegerField("duration (ms)", null=True, blank=True)
    result_preview_ciphertext = models.TextField(blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    approver = _unconstrained(settings.AUTH_USER_MODEL)
    approver_label = models.CharField("approver", max_length=150, blank=True)
    approved_digest = models.CharField(max_length=64, blank=True)
    self_approved = models.BooleanField(default=False)
    decided_at = models.DateTimeField("decided", null=True, blank=True)
    decision_note = models.TextField("note", blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # An approval enqueues such a call rather than waiting for resume().
    on_worker = models.BooleanField("on a worker", default=False)
    progress = models.FloatField(null=True, blank=True)
    progress_total = models.FloatField(null=True, blank=True)
    progress_message = models.CharField(max_length=200, blank=True)
    # Any worker resumes polling from these (governance/call_tasks.py).
    task_state = models.JSONField(null=True, blank=True, editable=False)
    task_secret_ciphertext = models.TextField(blank=True, editable=False)
    task_lease_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["-created"]
        verbose_name = "tool call"
        permissions = [
            ("approve_toolcall", "Can approve or deny tool calls"),
            ("view_toolcall_arguments", "Can view tool call arguments and results"),
        ]
        # An admin page reads the newest rows of one of these, so it costs the same at 1M rows;
        # each index is a write on every call, so none beyond what a page or retention uses.
        indexes = [
            # Partial: a call's own two writes never touch it.
            models.Index(
                fields=["expires_at"], condition=models.Q(status__in=PENDING), name="nr_llm_toolcall_expiry"
            ),
            models.Index(fields=["created", "id"], name="nr_llm_toolcall_created"),
            models.Index(fields=["status", "created"], name="nr_llm_toolcall_status"),
            models.Index(fields=["server_identifier", "created"], name="nr_llm_toolcall_server"),
            # With its server: the admin filters by tool only within a server.
            models.Index(fields=["tool_name", "server_identifier", "created"], name="nr_llm_toolcall_tool"),
            models.Index(fields=["actor_label", "created"], name="nr_llm_toolcall_actor"),
            models.Index(
                fields=["created"], condition=models.Q(status__in=PENDING), name="nr_llm_toolcall_inbox"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.id})"

    def __repr__(self) -> str:
        return f"<ToolCall {self.id} {self.tool_name} {self.status}>"


class ToolCallApproval(ToolCall):
    """The approvals view of the same rows: calls awaiting a decision first."""

    class Meta:
        proxy = True
        verbose_name = "approval"
        default_permissions = ()


class CallLease(models.Model):
    """A call in flight, counted in the shared database so a server's "calls at once" holds
    across processes and hosts; it expires with the call's budget if its process dies."""

    server = models.ForeignKey("nr_llm.McpServer", on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField("tool", max_length=64)
    #: Held by a "run alone" call: no other lease of the server is granted beside it.
    alone = models.BooleanField(default=False)
    expires_at = models.DateTimeField()
    holder = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "call lease"
        indexes = [models.Index(fields=["server", "expires_at"], name="nr_llm_calllease_server")]

    def __str__(self) -> str:
        return f"{self.tool_name} until {self.expires_at:%H:%M:%S}"
