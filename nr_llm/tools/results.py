"""What ``execute`` and ``resume`` return: the text a model reads, the server's content blocks and
structured content as models take them (``tool_messages``), and the status a loop branches on."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from ..mcp import Block, Progress

#: Only ``succeeded`` and ``failed`` say the call ran; ``denied`` and ``expired`` never will;
#: ``needs_authorization`` was not sent; ``needs_input`` asked for input the site could not give.
ToolStatus = Literal[
    "succeeded",
    "failed",
    "awaiting_approval",
    "denied",
    "expired",
    "running",
    "needs_authorization",
    "needs_input",
    "queued",
]


@dataclass(frozen=True)
class ToolResult:
    text: str
    is_error: bool
    #: "" for a local tool.
    server: str = ""
    status: ToolStatus = "succeeded"
    #: The ledger row's id (see "Call id" in the glossary); None when it could not be recorded.
    call_id: uuid.UUID | None = field(default=None, compare=False)
    #: In MCP shape, cleaned and capped.
    content: tuple[Block, ...] = ()
    #: Only when the tool declares an outputSchema and the answer conforms.
    structured: dict[str, Any] | None = None
    connect_url: str = ""
    progress: Progress | None = field(default=None, compare=False)
    tool_call_id: str | None = field(default=None, compare=False)
    #: ``no_actor``, ``not_connected``, ``reconnect`` or ``sign_in`` (then ``connect_url`` is the
    #: site's login page).
    authorization_reason: str = ""

    def __post_init__(self) -> None:
        # A loop branches on status and a provider reads is_error: an error that says it
        # succeeded would be both at once, so it is refused where it is built.
        if self.is_error and self.status == "succeeded":
            raise ValueError("an error result needs a status other than 'succeeded' (e.g. 'failed')")

    @property
    def awaiting_approval(self) -> bool:
        return self.status == "awaiting_approval"

    @property
    def images(self) -> tuple[Block, ...]:
        """The image blocks of ``content``, in order."""
        return tuple(block for block in self.content if block["type"] == "image")
