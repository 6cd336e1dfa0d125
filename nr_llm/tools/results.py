"""What ``execute`` and ``resume`` return: the text a model reads and the status a loop branches on."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Literal

#: ``awaiting_approval`` and ``running`` are neither success nor failure: the call has not
#: (yet) run here; ``denied`` and ``expired`` never will.
ToolStatus = Literal["succeeded", "failed", "awaiting_approval", "denied", "expired", "running"]


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool
    #: The identifier of the MCP server that answered (or failed); "" for a local tool.
    server: str = ""
    status: ToolStatus = "succeeded"
    #: The ledger row (``ToolCall``) of this call; None when it could not be recorded.
    #: Out of equality: two results that say the same thing are equal.
    call_id: uuid.UUID | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # An error result built without a status (the historical three fields) is a failure.
        if self.is_error and self.status == "succeeded":
            object.__setattr__(self, "status", "failed")

    @property
    def awaiting_approval(self) -> bool:
        return self.status == "awaiting_approval"
