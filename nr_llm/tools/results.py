"""What ``execute`` and ``resume`` return: the text a model reads, the server's content blocks and
structured content as models take them (``tool_messages``), and the status a loop branches on."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from ..mcp import Block, Progress

#: ``awaiting_approval`` and ``running`` are neither success nor failure: the call has not
#: (yet) run here; ``denied`` and ``expired`` never will; ``needs_authorization``: not sent,
#: the actor must connect their account first (``connect_url``); ``needs_input``: the server
#: asked for input the site's responder (or its absence) could not give, the call did not finish;
#: ``queued``: its row waits for a worker of the site's task backend (``tools.enqueue``).
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
    #: The identifier of the MCP server that answered (or failed); "" for a local tool.
    server: str = ""
    status: ToolStatus = "succeeded"
    #: The ledger row's id (``ToolCall``) of this call, what ``resume`` takes; None when it could
    #: not be recorded. Not the provider's id of the call (``tool_call_id``).
    #: Out of equality: two results that say the same thing are equal.
    call_id: uuid.UUID | None = field(default=None, compare=False)
    #: The answer's blocks in MCP shape (text, image, audio, resource_link, resource), cleaned
    #: and capped; () for a local tool or a call that did not run.
    content: tuple[Block, ...] = ()
    #: The server's structuredContent, when the tool declares an outputSchema and it conforms.
    structured: dict[str, Any] | None = None
    #: Where the actor connects their account (status ``needs_authorization``), else "".
    connect_url: str = ""
    #: The latest progress its server reported, for a call read back by ``tools.result()``.
    progress: Progress | None = field(default=None, compare=False)
    #: The provider's id of the tool call this answers (``execute(tool_call_id=...)``, or the id
    #: of the model's call in ``execute_many``); None when not given. Not the ledger row's id.
    tool_call_id: str | None = field(default=None, compare=False)
    #: Why (status ``needs_authorization``): ``no_actor``, ``not_connected``, ``reconnect`` or
    #: ``sign_in`` (an enterprise-managed server and no ID token for the user: ``connect_url``
    #: is then the site's login page); else "".
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
