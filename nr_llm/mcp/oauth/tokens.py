"""The bearer token of one MCP operation: cached, refreshed, or renewed after a challenge.

A valid stored token costs no leg. One that has expired (its absolute expiry minus a
skew) is refreshed before the operation's first MCP leg. A 401 during the operation
allows one refresh and one retry; a 403 ``insufficient_scope`` a step-up where no person
is needed (client credentials), else ``authorization_required`` naming the scopes. Every
exchange is a leg of the operation's deadline, so a slow authorization server spends
the same budget as the MCP server, and a spent budget is ``deadline_exhausted``.

A refresh token is never spent twice at once: the store's ``exclusive`` (one lock per
server in the process, a row lock in a database across processes, waited for within the
budget) is held around it, and the grant is re-read inside, because another caller may
have refreshed meanwhile. A renewed grant the store cannot keep fails the operation (see
``_kept``): its rotated refresh token may be the only valid one, and nobody must find out
only at the next expiry.

A refresh, once sent, is allowed to finish and to be kept, whatever is left of the caller's
budget: a rotating authorization server retires the old refresh token as it answers, so an
answer cut off by the caller's deadline, or not kept, would leave a grant nobody holds a valid
refresh token for. The lock, the re-read, the refresh and the save run on a thread of their own
(``_on_its_own``); the lock wait and the decision to send are still bounded by the caller's
budget, the refresh leg by one of its own (``REFRESH_SECONDS``, or the operation's budget if
longer); the caller waits no longer than its budget and ends ``deadline_exhausted`` on time,
while the refresh goes on and is kept for the next operation.

A grant is used only for the URL it was issued for and, for a pre-registered client, only
if it came from the configured issuer: otherwise it is set aside (``url_changed``,
``server_changed``) and nothing is sent, neither the token nor a refresh.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from ..wire.connection import ConnectionSettings
from ..wire.deadline import OperationDeadline
from ..wire.errors import AuthorizationError, ChallengeError, McpTransportError
from ..wire.redaction import Secrets
from ..wire.sealed import Sealed
from .challenge import NonceChallenge
from .discovery import confirm_issuer, same_issuer
from .dpop import DpopKey, usable_key
from .grants import client_credentials, refresh
from .identity import ClientConfig, WallClock, not_configured
from .legs import OAuthLegs, SessionFactory
from .scopes import union_scopes
from .store import Grant, GrantStore

logger = logging.getLogger("nr_llm.mcp.oauth")

# A token this close to its expiry is treated as expired: it could lapse on the way.
DEFAULT_SKEW_SECONDS = 30.0
# Authorizations (client credentials, step-up) one operation may try (MCP step-up guidance).
MAX_ATTEMPTS = 3
# What a refresh's own leg may take once it is sent (the operation's budget if that is longer):
# as long as a default operation, however little of its caller's budget is left.
REFRESH_SECONDS = 20.0
# Nonces an MCP server may ask for in one operation (one per request of a short conversation);
# beyond, or the same nonce twice, it is looping and the operation ends.
MAX_NONCE_RETRIES = 4


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
        connection: ConnectionSettings,
        *,
        wall: WallClock | None = None,
        session_factory: SessionFactory | None = None,
        secrets: Secrets | None = None,
    ) -> None:
        self.server = server
        # Every token this operation holds, for the client to mask in what servers send back.
        self.secrets = secrets or Secrets()
        self.mcp_url = mcp_url
        self.settings = settings
        self.deadline = deadline
        self.wall: WallClock = wall or SystemWallClock()
        self.connection = connection
        self._session_factory = session_factory
        self.legs = OAuthLegs(server, deadline, connection, session_factory=session_factory)
        self.attempts = 0
        self._refreshed_after_challenge = False
        # The grants this operation handed a token of out, by token: a header or a proof
        # is made for the grant that token belongs to.
        self._held: dict[str, Grant] = {}
        self._keys: dict[str, DpopKey] = {}
        # The MCP server's latest DPoP nonce, and how often it asked for one (RFC 9449 §9).
        self._nonce: str | None = None
        self._nonce_retries = 0

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
        grant = self._load()
        if grant is None:
            if self.config.lacks_issuer:
                raise not_configured(self.server)  # no point asking: its secret could go nowhere
            return None
        if grant.fresh(self.wall.time(), self.settings.skew_seconds):
            return grant.access_token
        if grant.refresh_token:
            return self._refresh(grant, forced=False).access_token
        if self.config.without_person:
            return self._acquire(None, None, grant).access_token
        raise self._required("refresh_refused", grant.scopes)

    def after_challenge(self, challenge: ChallengeError, sent: str | None) -> str:
        """A token to retry with after the MCP server refused ``sent``, or a typed error.

        Raises the challenge itself when it is not about the token (a 403 without
        ``insufficient_scope``): retrying would not change the answer.
        """
        if isinstance(challenge, NonceChallenge):
            return self._with_nonce(challenge, sent)
        grant = self._load()
        if challenge.status == 403:
            if challenge.error != "insufficient_scope":
                raise challenge
            wanted = union_scopes(grant.scopes if grant else (), challenge.scopes or ())
            if not self.config.without_person:
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
        if self.config.without_person:
            return self._acquire(challenge, challenge.scopes, grant).access_token
        raise self._required(
            "refresh_refused" if grant is not None else "not_authorized",
            challenge.scopes or (grant.scopes if grant else ()),
            challenge,
        )

    def authorization(self, token: str | None) -> dict[str, str]:
        """The ``Authorization`` header for ``token``, in the scheme its grant was issued for."""
        if not token:
            return Sealed()
        grant = self._held.get(token)
        scheme = "DPoP" if grant is not None and self._key_of(grant) is not None else "Bearer"
        return Sealed({"Authorization": f"{scheme} {token}"})

    def proof(self, method: str, url: str, token: str | None) -> dict[str, str]:
        """The ``DPoP`` header of one MCP leg sending ``token``: a fresh proof naming this method,
        this URL, the token's hash and the server's latest nonce; nothing for a Bearer token."""
        grant = self._held.get(token) if token else None
        key = self._key_of(grant) if grant is not None else None
        if key is None:
            return {}
        return Sealed(DPoP=key.proof(method, url, self.wall, access_token=token, nonce=self._nonce))

    def _with_nonce(self, challenge: NonceChallenge, sent: str | None) -> str:
        """The token just refused, to send again with the server's nonce; the refusal itself
        when that cannot help: no DPoP-bound token was sent, the nonce is the one the proof
        already carried (a loop), or the server has asked too often in this operation."""
        grant = self._held.get(sent) if sent else None
        if (
            sent is None
            or grant is None
            or self._key_of(grant) is None
            or challenge.nonce == self._nonce
            or self._nonce_retries >= MAX_NONCE_RETRIES
        ):
            raise challenge
        self._nonce_retries += 1
        self._nonce = challenge.nonce
        return sent

    def _key_of(self, grant: Grant) -> DpopKey | None:
        if grant.token_type != "DPoP":
            return None
        key = self._keys.get(grant.dpop_key or "")
        if key is None:
            key = usable_key(grant.dpop_key, self.server)
            if key is None:
                # A DPoP-bound token whose key is lost cannot be presented at all.
                raise self._required("refresh_refused", grant.scopes)
            self._keys[key.pem] = key
        return key

    def _load(self) -> Grant | None:
        """The stored grant, or a typed refusal when it is not this server's to use any more."""
        grant = self.store.load(self.server)
        if grant is None:
            return None
        self._hold(grant)
        if not grant.issued_for(self.mcp_url):
            raise self._required("url_changed", grant.scopes)
        if self.config.issuer and not same_issuer(self.config.issuer, grant.issuer):
            raise self._required("server_changed", grant.scopes)
        return grant

    def _refresh(self, stale: Grant, *, forced: bool) -> Grant:
        def renew() -> tuple[Grant, bool]:
            current = self._load()
            if current is None:
                raise self._required("not_authorized", stale.scopes)
            if (current.access_token, current.refresh_token) != (stale.access_token, stale.refresh_token):
                return current, False  # another caller refreshed while we waited
            if not forced and current.fresh(self.wall.time(), self.settings.skew_seconds):
                return current, False
            # Sent only while a leg still fits the caller's budget; once sent, the refresh has a
            # bound of its own, so that its answer is read and kept whatever the caller's clock says.
            self.deadline.grant()
            own = self.deadline.of_its_own(max(self.deadline.budget_seconds, REFRESH_SECONDS))
            with OAuthLegs(self.server, own, self.connection, session_factory=self._session_factory) as legs:
                return refresh(legs, current, self.config, self.wall), True

        return self._on_its_own(lambda: self._kept(renew))

    def _on_its_own(self, renewal: Callable[[], Grant]) -> Grant:
        """Run ``renewal`` on a thread of its own, waited for no longer than the caller's budget.

        Not a daemon: a process that ends while a refresh is on its way waits (within the
        refresh's own bound) for its answer to be kept, rather than lose the rotated token.
        """
        done: Future[Grant] = Future()

        def run() -> None:
            try:
                done.set_result(renewal())
            except Exception as exc:  # handed to the caller, whatever it is
                done.set_exception(exc)

        threading.Thread(target=run, name="nr-llm-oauth-refresh").start()
        try:
            return done.result(timeout=max(self.deadline.remaining_ns(), 0) / 1e9)
        except FutureTimeout:
            raise McpTransportError(
                "deadline_exhausted",
                self.server,
                f"MCP server {self.server!r}: this operation's budget of {self.deadline.budget_seconds:g} s "
                "ran out while its authorization server renewed the grant; the renewal goes on and is "
                "kept for the next operation. The budget is this installation's setting; raise it if "
                "the authorization server is slow but legitimate.",
            ) from None

    def _acquire(
        self, challenge: ChallengeError | None, scopes: tuple[str, ...] | None, previous: Grant | None
    ) -> Grant:
        self.attempts += 1
        if self.attempts > MAX_ATTEMPTS:
            raise self._required("attempts_exhausted", scopes or ())
        # The challenge's metadata URL first; a renewal without one finds it where the grant did.
        metadata = challenge.resource_metadata if challenge else None
        if metadata is None and previous is not None:
            metadata = previous.resource_metadata

        def obtain() -> tuple[Grant, bool]:
            grant = client_credentials(
                self.legs,
                self.mcp_url,
                self.config,
                self.store,
                self.wall,
                resource_metadata=metadata,
                challenged_scopes=scopes,
                previous_scopes=previous.scopes if previous else (),
                pinned_issuer=previous.issuer if previous else None,
                pinned_token_endpoint=previous.token_endpoint if previous else None,
            )
            return grant, True

        return self._kept(obtain)

    def _kept(self, renew: Callable[[], tuple[Grant, bool]]) -> Grant:
        """Run ``renew`` under the store's lock and save what it obtained before the lock goes.

        A renewed grant that cannot be kept (the save, or the commit when the lock is let go,
        fails) fails the operation, logged at ERROR: the authorization server may already
        have retired the stored refresh token, and going on with the new access token would
        leave the loss to be found at the next expiry, with no trace of why.
        """
        obtained: Grant | None = None
        try:
            with self.store.exclusive(self.server, self.deadline):
                grant, new = renew()
                self._hold(grant)
                if new:
                    obtained = grant
                    self.store.save(self.server, grant)
        except Exception as exc:
            if obtained is None:
                raise
            # Our stores' errors are typed and say what failed without a secret; of others, the type.
            why = str(exc) if isinstance(exc, McpTransportError) else type(exc).__name__
            logger.error(
                "the renewed OAuth grant of MCP server %s could not be stored (%s); its stored refresh "
                "token may already be spent: if its next renewal is refused, an operator must reconnect it",
                self.server,
                why,
            )
            raise AuthorizationError(
                "authorization_failed",
                self.server,
                f"MCP server {self.server!r} was not asked: its authorization server renewed the grant, "
                "but the renewed grant could not be stored, so this operation does not use it. Its stored "
                "refresh token may already be spent; if the next operation reports a refused renewal, "
                "an operator must reconnect it.",
                reason="grant_store",
                scopes=obtained.scopes,
            ) from exc
        return grant

    def _hold(self, grant: Grant) -> None:
        self.secrets.add(grant.access_token)
        self.secrets.add(grant.refresh_token)
        self._held[grant.access_token] = grant

    def _required(
        self, reason: str, scopes: tuple[str, ...], challenge: ChallengeError | None = None
    ) -> AuthorizationError:
        what = {
            "not_authorized": "has not been authorized yet",
            "refresh_refused": "needs a new authorization (its grant can no longer be renewed)",
            "insufficient_scope": "needs more scopes than it was granted",
            "attempts_exhausted": "kept refusing new authorizations in this operation",
            "url_changed": "has a grant issued for another URL than its configured one (the URL "
            "changed), so nothing was sent with it",
            "server_changed": "has a grant from another authorization server than its configured "
            "issuer, so nothing was sent with it",
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
