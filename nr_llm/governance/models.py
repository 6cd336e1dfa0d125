"""The tool-call ledger: one ``ToolCall`` row per ``execute()``, and the approval it may need.

Rows are written only by ``ledger.py`` (in a transaction of their own) and never by a form.
The references to the server, the tool and the users have no database constraint and are
left alone when their row goes (``DO_NOTHING``): an audit row outlives what it names (the
names are copied into it), and nobody else's transaction ever touches a ledger row. A
``SET NULL`` cascade would lock the row a caller's own transaction then keeps from the
ledger's connection (deleting a server in an ``atomic`` block around a call would wait on
itself for good), and a constraint check would wait on a caller's uncommitted tool row.
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
    # Written by ``tools.enqueue``: the row waits for a worker of the site's task backend.
    QUEUED = "queued", "Queued"


#: A decision is still to be made or acted on; past ``expires_at`` the call expires.
PENDING = (ToolCallStatus.AWAITING_APPROVAL, ToolCallStatus.APPROVED)


def _unconstrained(to: str, related_name: str = "+") -> models.ForeignKey:  # type: ignore[type-arg]
    # No index: nothing looks a call up by its tool, server or user (the admin filters on the
    # copied names, a deletion does nothing here), and each index is a write on every call.
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
    # What was called, copied at call time: the tool or its server may be renamed or deleted.
    tool_name = models.CharField("tool", max_length=200)
    tool = _unconstrained("nr_llm.McpTool")
    server = _unconstrained("nr_llm.McpServer", related_name="tool_calls")
    server_identifier = models.CharField("server", max_length=32, blank=True)
    remote_name = models.CharField(max_length=255, blank=True)
    # The definition the approver read and the model was offered, as it was at call time.
    tool_description = models.TextField(blank=True)
    tool_input_schema = models.JSONField(default=dict, blank=True)
    data_class = models.CharField(max_length=32, blank=True)
    data_class_ceiling = models.CharField(max_length=32, blank=True)
    # Fernet token (credentials.py) of the canonical JSON; the digest binds an approval to it.
    arguments_ciphertext = models.TextField(blank=True)
    arguments_digest = models.CharField("arguments SHA-256", max_length=64, blank=True)
    actor_user = _unconstrained(settings.AUTH_USER_MODEL)
    actor_label = models.CharField("actor", max_length=150, blank=True)
    status = models.CharField(max_length=20, choices=ToolCallStatus.choices)
    error_kind = models.CharField(max_length=32, blank=True)
    # "modern" (2026-07-28) or "handshake"; "" for a local tool or a call that got no answer.
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
    # Run by a worker of the site's task backend (``tools.enqueue``): its budget is
    # NR_LLM_QUEUED_OPERATION_TIMEOUT, and an approval enqueues it rather than waiting for resume().
    on_worker = models.BooleanField("on a worker", default=False)
    # The latest notifications/progress of a running call (MCP: progress, optional total, message).
    progress = models.FloatField(null=True, blank=True)
    progress_total = models.FloatField(null=True, blank=True)
    progress_message = models.CharField(max_length=200, blank=True)
    # The MCP task the server answered the call with (``TaskState.as_dict()`` without its session
    # id and request state, which are encrypted in ``task_secret_ciphertext``: a session id is a
    # handle on the server's session, and a request state is the server's opaque data). A worker
    # resumes polling from these; ``task_lease_until`` (database clock) says which worker polls.
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
        # Each page of the admin reads the newest rows of one of these (a backward index scan
        # that stops after a page), so a page costs the same at 100k and at 1M rows. Every
        # index is a cost on the write path: none beyond what a page, a filter or retention uses.
        indexes = [
            # The expiry sweep (each page view) and the pending counts: only pending rows, so
            # a call's own two writes never touch it.
            models.Index(
                fields=["expires_at"], condition=models.Q(status__in=PENDING), name="nr_llm_toolcall_expiry"
            ),
            # The default order (the admin adds the pk to make it total); retention's range.
            models.Index(fields=["created", "id"], name="nr_llm_toolcall_created"),
            models.Index(fields=["status", "created"], name="nr_llm_toolcall_status"),
            models.Index(fields=["server_identifier", "created"], name="nr_llm_toolcall_server"),
            # With its server: the tool filter is offered once a server is chosen, and the two
            # equalities then read one index range in order (with the tool alone leading,
            # PostgreSQL would AND two indexes and read every entry of the server's).
            models.Index(fields=["tool_name", "server_identifier", "created"], name="nr_llm_toolcall_tool"),
            models.Index(fields=["actor_label", "created"], name="nr_llm_toolcall_actor"),
            # The approvals inbox: small (pending calls expire), newest first.
            models.Index(
                fields=["created"], condition=models.Q(status__in=PENDING), name="nr_llm_toolcall_inbox"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.id})"

    def __repr__(self) -> str:
        # Never the ciphertexts: harmless without the key, but nothing has a reason to read them.
        return f"<ToolCall {self.id} {self.tool_name} {self.status}>"


class ToolCallApproval(ToolCall):
    """The approvals view of the same rows: calls awaiting a decision first."""

    class Meta:
        proxy = True
        verbose_name = "approval"
        default_permissions = ()


class CallLease(models.Model):
    """A call to a server that is being sent or answered, as the site's caps count it.

    A server's "calls at once" and a tool's "run alone" are promises about the server, so they
    hold across turns, processes and hosts: each counts these rows, written in the shared
    database (``governance/leases.py``). A row is deleted when its call ends, and expires on the
    database's clock with the call's budget, so a killed process frees its places.
    """

    server = models.ForeignKey("nr_llm.McpServer", on_delete=models.CASCADE, related_name="+")
    tool_name = models.CharField("tool", max_length=64)
    #: Held by a "run alone" call: no other lease of the server is granted beside it.
    alone = models.BooleanField(default=False)
    expires_at = models.DateTimeField()
    #: Who holds it (host, process, thread), for an operator reading the table.
    holder = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "call lease"
        indexes = [models.Index(fields=["server", "expires_at"], name="nr_llm_calllease_server")]

    def __str__(self) -> str:
        return f"{self.tool_name} until {self.expires_at:%H:%M:%S}"
