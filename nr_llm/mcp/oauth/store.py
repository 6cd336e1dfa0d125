"""What an authorization leaves behind, and the small protocol that keeps it.

The protocol client never decides where grants live: the Django app keeps them in the
database (encrypted, shared by every worker), scripts and tests in memory. A store must
give a consistent read under ``exclusive``: the token source holds it around re-reading,
refreshing and saving, so that two callers never spend one refresh token (a rotating
authorization server would revoke the whole grant on the second use).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

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
    endpoint only, whatever a later challenge or metadata document says.
    """

    access_token: str = field(repr=False)
    issuer: str
    token_endpoint: str
    resource: str
    client: ClientRegistration
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    # "authorization_code" or "client_credentials": how a lost grant can be renewed.
    grant_type: str = "authorization_code"

    def fresh(self, now: float, skew: float) -> bool:
        """Usable for a request starting ``now``: unexpired with ``skew`` seconds to spare."""
        return self.expires_at is None or now < self.expires_at - skew


class GrantStore(Protocol):
    """Where grants and client registrations of servers are kept, by server identifier."""

    def load(self, server: str) -> Grant | None: ...

    def save(self, server: str, grant: Grant) -> None:
        """Keep ``grant`` durably at once: a rotated refresh token lost here is lost for good."""
        ...

    def forget(self, server: str) -> None: ...

    def load_registration(self, server: str, issuer: str) -> ClientRegistration | None: ...

    def save_registration(self, server: str, registration: ClientRegistration) -> None: ...

    def exclusive(self, server: str) -> AbstractContextManager[None]:
        """Held around re-read, refresh and save of one server's grant; as wide as the store
        is shared (a process lock in memory, a row lock in a database)."""
        ...


class MemoryGrantStore:
    """Grants in this process's memory, for tests and scripts."""

    def __init__(self) -> None:
        self._grants: dict[str, Grant] = {}
        self._registrations: dict[tuple[str, str], ClientRegistration] = {}
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

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

    @contextlib.contextmanager
    def exclusive(self, server: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(server, threading.Lock())
        with lock:
            yield
