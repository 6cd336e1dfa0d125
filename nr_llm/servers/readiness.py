"""What keeps a saved server from use, said the same way on its admin page and by ``mcp_server``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hold:
    """One reason a server is not in use yet: a short flag for its row, the sentence for its save."""

    flag: str
    why: str
    #: The same for ``mcp_server``, in its own words: its flags, not the admin's fields.
    said: str = ""


NO_DATA_CLASS = Hold(
    "no data class: imports refused",
    "no data class is declared, so an import (here or manage.py mcp_import) refuses it and "
    "none of its tools is offered; declare what data it may see (its data class, under Policy)",
    "no data class is declared, so an import refuses it and none of its tools is offered; "
    "declare what data it may see with --data-class",
)
DISABLED = Hold(
    "disabled: tools not offered",
    "it is disabled, so manage.py mcp_import --all skips it and none of its tools is offered "
    "to a model or run; importing it by name still works, to review its tools before it is enabled",
    "it is disabled, so manage.py mcp_import --all skips it and none of its tools is offered to a "
    "model or run; --import still imports it, and --enabled puts it in use",
)


def holds(enabled: bool, data_class: str) -> tuple[Hold, ...]:
    """What keeps a server from use, in the order an operator fixes it; () when nothing does."""
    return (*(() if data_class else (NO_DATA_CLASS,)), *(() if enabled else (DISABLED,)))
