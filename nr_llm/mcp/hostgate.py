"""Refuse servers on addresses an attacker could use to reach the inside (SSRF guard).

The host is resolved and every address checked before a credential is attached or a
byte is sent; one bad address refuses the host, because the connection may use any of
them. Only an installation that sets ``allow_private_networks`` may talk to loopback or
private servers.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from .errors import McpTransportError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def forbidden(address: IPAddress) -> bool:
    """True for loopback, private, link-local, multicast, reserved, unspecified or any non-global address."""
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv4 address in IPv6 clothing is judged as the IPv4 address it reaches.
        for embedded in (address.ipv4_mapped, address.sixtofour, (address.teredo or (None, None))[1]):
            if embedded is not None and forbidden(embedded):
                return True
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def split_target(url: str, server: str) -> tuple[str, int]:
    """The host and port of an http(s) URL, or ``unreachable`` when it has none."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise McpTransportError("unreachable", server, f"MCP server {server!r} has an unusable URL.") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise McpTransportError(
            "unreachable", server, f"MCP server {server!r} has no http(s) URL with a host."
        )
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def check_host(url: str, server: str) -> None:
    """Raise ``refused_host`` when the URL's host resolves to any forbidden address."""
    host, port = split_target(url, server)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise McpTransportError(
            "unreachable", server, f"MCP server {server!r}: its host name could not be resolved."
        ) from exc
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if forbidden(address):
            raise McpTransportError(
                "refused_host",
                server,
                f"MCP server {server!r} was not contacted: its host resolves to a loopback, private "
                "or otherwise non-public address, and private networks are not allowed here.",
            )
