"""Where grants are kept, behind a small protocol: the database for the app, memory for tests.

A store serializes each server's refresh (``exclusive``), because a rotating authorization
server revokes the whole grant when one refresh token is used twice.
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
    # None or 0: does not expire.
    secret_expires_at: float | None = None
    origin: str = "dynamic"


@dataclass(frozen=True)
class Grant:
    """Tokens and what they are pinned to: secrets go only to the pinned token endpoint, and a
    changed server URL sets the grant aside so a token never reaches an unintended party."""

    access_token: str = field(repr=False)
    issuer: str
    token_endpoint: str
    resource: str
    client: ClientRegistration
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    # Says how a lost grant can be renewed (with a person or without).
    grant_type: str = "authorization_code"
    # Empty for a grant from before it was recorded: the resource must then cover the URL.
    mcp_url: str = ""
    resource_metadata: str | None = None
    # "DPoP" binds the token to ``dpop_key`` (RFC 9449).
    token_type: str = "Bearer"
    dpop_key: str | None = field(default=None, repr=False)

    def fresh(self, now: float, skew: float) -> bool:
        return self.expires_at is None or now < self.expires_at - skew

    def issued_for(self, url: str) -> bool:
        return issued_for(self.mcp_url, self.resource, url)


def issued_for(mcp_url: str, resource: str, url: str) -> bool:
    """The very URL, or when none was recorded, one its resource covers."""
    return mcp_url == url if mcp_url else covers(resource, url)


class GrantStore(Protocol):
    """Where grants and client registrations of servers are kept, by server identifier."""

    def load(self, server: str) -> Grant | None: ...

    def save(self, server: str, grant: Grant) -> None:
        """Keep durably at once, or raise: a rotated refresh token lost here is lost for good."""
        ...

    def forget(self, server: str) -> None: ...

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None: ...

    def save_registration(self, server: str, registration: ClientRegistration) -> None: ...

    def exclusive(self, server: str, deadline: OperationDeadline) -> AbstractContextManager[None]:
        """Held around re-read, refresh and save, as wide as the store is shared; the wait is
        spent from the operation's budget."""
        ...


class _Lock:
    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


class ServerLocks:
    """One lock per server, not per store (the app builds a store per operation); weakly held."""

    def __init__(self) -> None:
        self._forget()
        _SERVER_LOCKS.add(self)

    def _forget(self) -> None:
        # Also in a forked child, where no thread exists to release a parent's lock.
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
    """What is left of the budget less the request that must still follow."""
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
