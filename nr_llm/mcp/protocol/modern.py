"""The 2026-07-28 request envelope: every request describes itself (no session, no handshake).

``params._meta`` carries the revision, the client's capabilities and its identity; the
headers repeat what a gateway routes on (``MCP-Protocol-Version`` is set by the transport,
``Mcp-Method`` always, ``Mcp-Name`` for the name-bearing methods).
"""

from __future__ import annotations

from typing import Any

from .param_headers import encode_value

MODERN_VERSION = "2026-07-28"
# Newest first: the revision a probe offers first.
MODERN_VERSIONS = (MODERN_VERSION,)

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
# Method -> the params member mirrored in Mcp-Name.
_NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # SEP-2663: a task's requests carry its id, so a gateway routes them to the task's holder.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

UNSUPPORTED_VERSION = -32022
HEADER_MISMATCH = -32020
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600


def stamped(
    params: dict[str, Any], version: str, capabilities: dict[str, Any], client_info: dict[str, str]
) -> dict[str, Any]:
    """``params`` with the envelope in ``_meta`` (a caller's own ``_meta`` members kept)."""
    meta = dict(params.get("_meta") or {})
    meta[VERSION_KEY] = version
    meta[CAPABILITIES_KEY] = capabilities
    meta[CLIENT_INFO_KEY] = client_info
    return {**params, "_meta": meta}


def routing_headers(method: str, params: dict[str, Any]) -> dict[str, str]:
    headers = {"Mcp-Method": method}
    member = _NAMED.get(method)
    if member is not None and isinstance(params.get(member), str):
        headers["Mcp-Name"] = encode_value(params[member])
    return headers


def modern_version_in(versions: object) -> str | None:
    """The newest revision of ours in a server's list (``supportedVersions``, or -32022's
    ``supported``), or None."""
    if not isinstance(versions, list):
        return None
    return next((version for version in MODERN_VERSIONS if version in versions), None)


def supported_in_error(data: object) -> str | None:
    return modern_version_in(data.get("supported")) if isinstance(data, dict) else None


def server_info(result: dict[str, Any]) -> dict[str, Any]:
    """The server's name and version: in the result's ``_meta`` since the 2026-07-28 text,
    in ``serverInfo`` for earlier drafts."""
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    if not isinstance(info, dict):
        info = result.get("serverInfo")
    return info if isinstance(info, dict) else {}
