"""What an authorization leaves behind, and the small protocol that keeps it.

The protocol client never decides where grants live: the Django app keeps them in the
database (encrypted, shared by every worker), scripts and tests in memory. A store owns
the single flight of a refresh: ``exclusive`` is held around re-reading, refreshing and
saving one server's grant, so that two callers never spend one refresh token (a rotating
authorization server would revoke the whole grant on the second use). Waiting for it is
part of the operation: bounded by what is left of its budget, ending ``deadline_exhausted``.
A store raises ``McpTransportError`` for its own failures, never its backend's errors.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from ..wire.deadline import MINIMUM_LEG_SECONDS, OperationDeadline
from ..wire.errors import McpTransportError
from .discovery import covers

# Token endpoint client authentication methods (RFC 7591 §2, RFC 7523 §2.2).
AuthMethod = str


@dataclass(frozen=True)
class ClientRegistration:
    """Who we are at one authorization server: pre-registered, registered dynamically, or a metadata URL."""

    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    auth_method: AuthMethod = "none"
    # RFC 7591 client_secret_expires_at as epoch seconds; None or 0: does not expire.
    secret_expires_at: float | None = None
    # How the identity came about: "preregistered", "dynamic" or "metadata_document".
    origin: str = "dynamic"


@dataclass(frozen=True)
class Grant:
    """An authorization of one MCP server: tokens plus what they are pinned to.

    ``expires_at`` is absolute (epoch seconds), so a grant read back after a restart
    still knows when it ends. ``issuer``, ``token_endpoint`` and ``resource`` are pinned
    when the server is authorized: the refresh token and client secret go to that token
    endpoint only, whatever a later challenge or metadata document says. ``mcp_url`` is
    the URL the grant was issued for: used for any other, the token would reach a party
    it was not meant for, so a changed URL sets the grant aside. ``resource_metadata`` is
    where the protected resource metadata was found (often only the challenge says), so
    a renewal can find it again.
    """

    access_token: str = field(repr=False)
    issuer: str
    token_endpoint: str
    resource: str
    client: ClientRegistration
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    # "authorization_code", or one a client obtains with no person ("client_credentials",
    # "enterprise", "workload"): how a lost grant can be renewed.
    grant_type: str = "authorization_code"
    # Empty for a grant from before it was recorded: the resource must then cover the URL.
    mcp_url: str = ""
    resource_metadata: str | None = None
    # "Bearer", or "DPoP" for a token bound to ``dpop_key`` (RFC 9449), which is then sent with
    # the DPoP scheme and a proof per request; the key (PEM) is the grant's own, never shown.
    token_type: str = "Bearer"
    dpop_key: str | None = field(default=None, repr=False)

    def fresh(self, now: float, skew: float) -> bool:
        """Usable for a request starting ``now``: unexpired with ``skew`` seconds to spare."""
        return self.expires_at is None or now < self.expires_at - skew

    def issued_for(self, url: str) -> bool:
        return issued_for(self.mcp_url, self.resource, url)


def issued_for(mcp_url: str, resource: str, url: str) -> bool:
    """Whether a grant recorded for ``mcp_url`` (empty: not recorded) and ``resource`` may be used
    for ``url``: the very URL, or for an unrecorded one, a URL its resource covers."""
    return mcp_url == url if mcp_url else covers(resource, url)


class GrantStore(Protocol):
    """Where grants and client registrations of servers are kept, by server identifier."""

    def load(self, server: str) -> Grant | None: ...

    def save(self, server: str, grant: Grant) -> None:
        """Keep ``grant`` durably at once: a rotated refresh token lost here is lost for good.

        Raises (``McpTransportError``) when it cannot: the caller must not go on as if kept.
        """
        ...

    def forget(self, server: str) -> None: ...

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None: ...

    def save_registration(self, server: str, registration: ClientRegistration) -> None: ...

    def exclusive(self, server: str, deadline: OperationDeadline) -> AbstractContextManager[None]:
        """Held around re-read, refresh and save of one server's grant; as wide as the store
        is shared (a process lock in memory, and a row lock in a database). Raises
        ``deadline_exhausted`` when it is not had while a leg could still follow; on leaving,
        raises if what was saved inside could not be kept."""
        ...


class _Lock:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


class ServerLocks:
    """One lock per key in this process, alive while someone holds or waits for it.

    Keyed by what the lock protects (a server), never by the object asking: the app builds
    a store per operation. The map is weak, so it holds only the keys in use.
    """

    def __init__(self) -> None:
        self._forget()
        _SERVER_LOCKS.add(self)

    def _forget(self) -> None:
        # Also in a forked child: a parent's thread that held a lock at the fork does not exist
        # there to let it go, and no renewal of the parent's is in progress in the child.
        self._guard = threading.Lock()
        self._locks: weakref.WeakValueDictionary[Hashable, _Lock] = weakref.WeakValueDictionary()

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.contextmanager
    def holding(self, key: Hashable, deadline: OperationDeadline, server: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.get(key)
            if entry is None:
                entry = self._locks[key] = _Lock()
        if not entry.lock.acquire(timeout=lock_wait_seconds(deadline)):
            raise wait_exhausted(deadline, server)
        try:
            yield
        finally:
            entry.lock.release()


_SERVER_LOCKS: weakref.WeakSet[ServerLocks] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for locks in list(_SERVER_LOCKS):
        locks._forget()


os.register_at_fork(after_in_child=_after_fork_in_child)


def lock_wait_seconds(deadline: OperationDeadline) -> float:
    """How long one may wait for another caller's renewal: what is left, less the one leg that
    must still follow. Free locks are taken at once even at the floor.

    Starts the operation's clock if no leg has (the wait is spent from the budget like a
    leg), and raises ``deadline_exhausted`` when not even a leg is left.
    """
    deadline.grant()
    return max(deadline.remaining_ns() / 1e9 - MINIMUM_LEG_SECONDS, 0.0)


def wait_exhausted(deadline: OperationDeadline, server: str) -> McpTransportError:
    return McpTransportError(
        "deadline_exhausted",
        server,
        f"MCP server {server!r} was not asked: this operation's budget of {deadline.budget_seconds:g} s "
        "was spent waiting for another operation's renewal of its grant. The budget is this "
        "installation's setting; raise it if the authorization server is slow but legitimate.",
    )


class MemoryGrantStore:
    """Grants in this process's memory, for tests and scripts."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._registrations: dict[tuple[str, str], ClientRegistration] = {}
        self._locks = ServerLocks()

    def load(self, server: str) -> Grant | None:
        return self._grants.get(server)

    def save(self, server: str, grant: Grant) -> None:
        self._grants[server] = grant

    def forget(self, server: str) -> None:
        self._grants.pop(server, None)

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None:
        return self._registrations.get((server, issuer))

    def save_registration(self, server: str, registration: ClientRegistration) -> None:
        self._registrations[(server, registration.issuer)] = registration

    def exclusive(self, server: str, deadline: OperationDeadline) -> AbstractContextManager[None]:
        return self._locks.holding(server, deadline, server)
