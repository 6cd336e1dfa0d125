"""The bearer token of one MCP operation: cached, refreshed, or renewed after a challenge.

A valid stored token costs no leg. One that has expired (its absolute expiry minus a
skew) is refreshed before the operation's first MCP leg. A 401 during the operation
allows one refresh and one retry; a 403 ``insufficient_scope`` a step-up where no person
is needed (client credentials), else ``authorization_required`` naming the scopes. Every
exchange is a leg of the operation's deadline, so a slow authorization server spends
the same budget as the MCP server, and a spent budget is ``deadline_exhausted``.

A refresh token is never spent twice at once: one lock per server in this process, and
inside it the store's own ``exclusive`` (a row lock in a database, across processes),
after which the grant is re-read, because another caller may have refreshed meanwhile.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from ..deadline import MINIMUM_LEG_SECONDS, OperationDeadline
from ..errors import AuthorizationError, ChallengeError, McpTransportError
from ..hostgate import Resolver
from .discovery import confirm_issuer
from .grants import client_credentials, refresh
from .identity import ClientConfig, WallClock
from .legs import OAuthLegs, SessionFactory
from .scopes import union
from .store import Grant, GrantStore

# A token this close to its expiry is treated as expired: it could lapse on the way.
DEFAULT_SKEW_SECONDS = 30.0
# Authorizations (client credentials, step-up) one operation may try (MCP step-up guidance).
MAX_ATTEMPTS = 3

_guard = threading.Lock()
_refresh_locks: dict[tuple[int, str], threading.Lock] = {}


class SystemWallClock:
    def time(self) -> float:
        return time.time()


@dataclass(frozen=True)
class OAuthSettings:
    """What the client needs to authorize one server; built per operation like ``Endpoint``."""

    config: ClientConfig
    store: GrantStore = field(repr=False)
    skew_seconds: float = DEFAULT_SKEW_SECONDS


class OperationTokens:
    """The token side of one operation against one server."""

    def __init__(
        self,
        server: str,
        mcp_url: str,
        settings: OAuthSettings,
        deadline: OperationDeadline,
        *,
        allow_private_networks: bool,
        wall: WallClock | None = None,
        session_factory: SessionFactory | None = None,
        resolver: Resolver | None = None,
        ca_bundle: str | None = None,
    ) -> None:
        self.server = server
        self.mcp_url = mcp_url
        self.settings = settings
        self.deadline = deadline
        self.wall: WallClock = wall or SystemWallClock()
        self.legs = OAuthLegs(
            server,
            deadline,
            allow_private_networks=allow_private_networks,
            session_factory=session_factory,
            resolver=resolver,
            ca_bundle=ca_bundle,
        )
        self.attempts = 0
        self._refreshed_after_challenge = False

    def close(self) -> None:
        self.legs.close()

    @property
    def store(self) -> GrantStore:
        return self.settings.store

    @property
    def config(self) -> ClientConfig:
        return self.settings.config

    def bearer(self) -> str | None:
        """The access token to send: the stored one while fresh (no leg), else renewed now.

        None when the server was never authorized: the first MCP leg then goes without a
        token, so that the server's challenge can say which scopes and which metadata to use.
        """
        grant = self.store.load(self.server)
        if grant is None:
            return None
        if grant.fresh(self.wall.time(), self.settings.skew_seconds):
            return grant.access_token
        if grant.refresh_token:
            return self._refresh(grant, forced=False).access_token
        if self.config.grant == "client_credentials":
            return self._acquire(None, None, grant).access_token
        raise self._required("refresh_refused", grant.scopes)

    def after_challenge(self, challenge: ChallengeError, sent: str | None) -> str:
        """A token to retry with after the MCP server refused ``sent``, or a typed error.

        Raises the challenge itself when it is not about the token (a 403 without
        ``insufficient_scope``): retrying would not change the answer.
        """
        grant = self.store.load(self.server)
        if challenge.status == 403:
            if challenge.error != "insufficient_scope":
                raise challenge
            wanted = union(grant.scopes if grant else (), challenge.scopes or ())
            if self.config.grant != "client_credentials":
                raise self._required("insufficient_scope", wanted, challenge)
            return self._acquire(challenge, wanted, grant).access_token
        if grant is not None and sent is not None and grant.access_token != sent:
            return grant.access_token  # renewed meanwhile by another caller: try that one
        if grant is not None and challenge.resource_metadata and not self._refreshed_after_challenge:
            # One PRM leg, and only on a 401 naming its metadata: cheaper than a refresh
            # spent at an authorization server the resource no longer trusts.
            confirm_issuer(self.legs, self.mcp_url, challenge.resource_metadata, grant.issuer)
        if grant is not None and grant.refresh_token and not self._refreshed_after_challenge:
            self._refreshed_after_challenge = True
            return self._refresh(grant, forced=True).access_token
        if self.config.grant == "client_credentials":
            return self._acquire(challenge, challenge.scopes, grant).access_token
        raise self._required(
            "refresh_refused" if grant is not None else "not_authorized",
            challenge.scopes or (grant.scopes if grant else ()),
            challenge,
        )

    def _refresh(self, stale: Grant, *, forced: bool) -> Grant:
        with self._process_lock(), self.store.exclusive(self.server):
            current = self.store.load(self.server)
            if current is None:
                raise self._required("not_authorized", stale.scopes)
            if (current.access_token, current.refresh_token) != (stale.access_token, stale.refresh_token):
                return current  # another caller refreshed while we waited
            if not forced and current.fresh(self.wall.time(), self.settings.skew_seconds):
                return current
            renewed = refresh(self.legs, current, self.config, self.wall)
            self.store.save(self.server, renewed)
            return renewed

    def _acquire(
        self, challenge: ChallengeError | None, scopes: tuple[str, ...] | None, previous: Grant | None
    ) -> Grant:
        self.attempts += 1
        if self.attempts > MAX_ATTEMPTS:
            raise self._required("attempts_exhausted", scopes or ())
        with self._process_lock(), self.store.exclusive(self.server):
            grant = client_credentials(
                self.legs,
                self.mcp_url,
                self.config,
                self.store,
                self.wall,
                resource_metadata=challenge.resource_metadata if challenge else None,
                challenged_scopes=scopes,
                previous_scopes=previous.scopes if previous else (),
                pinned_issuer=previous.issuer if previous else None,
            )
            self.store.save(self.server, grant)
            return grant

    def _process_lock(self) -> _Held:
        key = (id(self.store), self.server)
        with _guard:
            lock = _refresh_locks.setdefault(key, threading.Lock())
        return _Held(lock, self.deadline, self.server)

    def _required(
        self, reason: str, scopes: tuple[str, ...], challenge: ChallengeError | None = None
    ) -> AuthorizationError:
        what = {
            "not_authorized": "has not been authorized yet",
            "refresh_refused": "needs a new authorization (its grant can no longer be renewed)",
            "insufficient_scope": "needs more scopes than it was granted",
            "attempts_exhausted": "kept refusing new authorizations in this operation",
        }[reason]
        wanted = f" (scopes: {' '.join(scopes)})" if scopes else ""
        return AuthorizationError(
            "authorization_required",
            self.server,
            f"MCP server {self.server!r} {what}{wanted}; an operator must connect it.",
            reason=reason,  # type: ignore[arg-type]
            scopes=scopes,
            resource_metadata=challenge.resource_metadata if challenge else None,
        )


class _Held:
    """A process lock waited for no longer than the operation's budget allows."""

    def __init__(self, lock: threading.Lock, deadline: OperationDeadline, server: str) -> None:
        self._lock = lock
        self._deadline = deadline
        self._server = server

    def __enter__(self) -> None:
        # Free: taken at once, whatever is left. Held elsewhere: waited for only while a
        # leg could still follow.
        wait = max(self._deadline.remaining_ns() / 1e9 - MINIMUM_LEG_SECONDS, 0.0)
        if not self._lock.acquire(timeout=wait):
            self._deadline.grant()  # raises deadline_exhausted when that is what happened
            raise McpTransportError(
                "timeout",
                self._server,
                f"MCP server {self._server!r}: another refresh of its grant did not finish in time.",
            )

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()
