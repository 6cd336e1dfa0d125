"""Local tool names, ``mcp_<identifier>_<remote>``, refused rather than rewritten when they do not
fit function-calling APIs: a rewritten name could collide or not map back to the tool enabled."""

from __future__ import annotations

import re

from ..wire.text import clean

LOCAL_NAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MAX_LOCAL_NAME = 64


class InvalidToolName(ValueError):
    """The message says how the name breaks the rule."""


def local_name(identifier: str, remote_name: str) -> str:
    """The name a model calls: the server's identifier keeps tools of two servers apart."""
    return f"mcp_{identifier}_{remote_name}"


def checked_local_name(identifier: str, remote_name: str) -> str:
    if not remote_name:
        raise InvalidToolName("remote tool name is empty")
    name = local_name(identifier, remote_name)
    # fullmatch: `$` would let a trailing newline through.
    if LOCAL_NAME_RE.fullmatch(name):
        return name
    shown = clean(remote_name)
    if len(name) > MAX_LOCAL_NAME:
        raise InvalidToolName(
            f"local name for remote tool {shown!r} would be {len(name)} characters; "
            f"at most {MAX_LOCAL_NAME} are allowed (shorten the remote name or the server identifier)"
        )
    raise InvalidToolName(
        f"remote tool name {shown!r} has characters outside A-Z, a-z, 0-9, '_' and '-'; "
        "names are rejected, never rewritten"
    )
