"""Refuse servers on addresses an attacker could use to reach the inside (SSRF guard).

The host is resolved and every address checked before a credential is attached or a
byte is sent; one bad address refuses the host, because the connection may use any of
them. Only an installation that sets ``allow_private_networks`` may talk to loopback or
private servers.

A resolver's answer may be remembered for a short while (``remember_seconds``: the client
passes its idle-connection limit, so turning reuse off turns this off too) and used again
instead of a lookup. DNS rebinding gains nothing from it: the gate judges every answer, the
remembered one included, on every operation, and only the addresses judged are dialled; a
name that later resolves inside is refused at its next lookup. What a remembered answer
costs is the other way round: a server that moved is found that many seconds late.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from .errors import McpTransportError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

Resolver = Callable[[str, int], Sequence[str]]
"""A host name and port to the addresses to dial, in order (e.g. names a test maps to loopback)."""


def system_resolver(host: str, port: int) -> list[str]:
    """The system's answer (``getaddrinfo``), each address once, in the order it gave them."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def forbidden(address: IPAddress) -> bool:
    """True for loopback, private, link-local, multicast, reserved, unspecified or any non-global address."""
    if isinstance(address, ipaddress.IPv6Address):
        # An IPv4 address in IPv6 clothing is judged as the IPv4 address it reaches.
        if address.ipv4_mapped is not None:
            return forbidden(address.ipv4_mapped)
        for embedded in (address.sixtofour, (address.teredo or (None, None))[1]):
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


class _Answers:
    """Resolver answers of this process, each until its time is up (monotonic seconds).

    A forked child starts with none and a new lock (``_forget``): a thread of the parent may
    have held the lock at the fork and does not exist in the child to let it go.
    """

    def __init__(self) -> None:
        self._forget()

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[tuple[str, int, Resolver | None], tuple[float, list[str]]] = {}

    def get(self, key: tuple[str, int, Resolver | None]) -> list[str] | None:
        with self._lock:
            found = self._answers.get(key)
            if found is None or time.monotonic() >= found[0]:
                self._answers.pop(key, None)
                return None
            return list(found[1])

    def put(self, key: tuple[str, int, Resolver | None], addresses: list[str], seconds: float) -> None:
        with self._lock:
            now = time.monotonic()
            # Expired answers go with every new one: a process that met many hosts keeps few.
            for old in [old for old, (until, _) in self._answers.items() if until <= now]:
                del self._answers[old]
            self._answers[key] = (now + seconds, list(addresses))

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()


ANSWERS = _Answers()
os.register_at_fork(after_in_child=ANSWERS._forget)


def resolve(
    url: str, server: str, seconds: float, resolver: Resolver | None = None, *, remember_seconds: float = 0.0
) -> list[str]:
    """Every address the URL's host resolves to, looked up once within ``seconds``, or the
    answer of a lookup less than ``remember_seconds`` ago.

    The system resolver has no timeout of its own, so the lookup (``resolver``, the system's
    by default) runs on a daemon thread that the operation stops waiting for after ``seconds``:
    exactly what is left of its budget (``OperationDeadline.wait_seconds``), not a leg's grant
    rounded up to whole seconds. The connections of the operation then use exactly these addresses: what the
    gate judged is what is dialled. The URL's host stays the TLS identity (connections.py).
    """
    host, port = split_target(url, server)
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass  # a name, not a literal address: ask the resolver
    key = (host, port, resolver)
    remembered = ANSWERS.get(key) if remember_seconds > 0 else None
    if remembered is not None:
        return remembered
    addresses = _look_up(host, port, server, seconds, resolver)
    if remember_seconds > 0:
        ANSWERS.put(key, addresses, remember_seconds)
    return addresses


def _look_up(host: str, port: int, server: str, seconds: float, resolver: Resolver | None) -> list[str]:
    found: list[list[str]] = []
    failures: list[Exception] = []
    done = threading.Event()

    def lookup() -> None:
        try:
            answer = [str(address) for address in (resolver or system_resolver)(host, port)]
            for address in answer:
                ipaddress.ip_address(address.split("%", 1)[0])  # an address, or ValueError
            found.append(list(dict.fromkeys(answer)))
        except (OSError, UnicodeError, ValueError) as exc:
            failures.append(exc)
        finally:
            done.set()

    threading.Thread(target=lookup, name="nr-llm-mcp-resolve", daemon=True).start()
    if not done.wait(seconds):
        raise McpTransportError(
            "timeout",
            server,
            (
                f"MCP server {server!r}: its host name did not resolve within the {seconds:.1f} s left "
                "of this operation's budget."
            ),
        )
    if not found or not found[0]:
        raise McpTransportError(
            "unreachable", server, f"MCP server {server!r}: its host name could not be resolved."
        ) from (failures[0] if failures else None)
    return found[0]


#: What an operator can do about a refusal: the Django setting's name (only a string here; this
#: package reads no settings), and what it is for, so it is not switched on in production by reflex.
ALLOW_PRIVATE_HINT = (
    "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True allows them: it is meant for development and for "
    "internal servers on a network this site trusts."
)


def refuse_private(addresses: list[str], server: str) -> None:
    """Raise ``refused_host`` when any address is forbidden."""
    for address in addresses:
        if forbidden(ipaddress.ip_address(address.split("%", 1)[0])):
            raise McpTransportError(
                "refused_host",
                server,
                f"MCP server {server!r} was not contacted: its host resolves to a loopback, private "
                "or otherwise non-public address, and private networks are not allowed here. "
                f"{ALLOW_PRIVATE_HINT}",
            )
