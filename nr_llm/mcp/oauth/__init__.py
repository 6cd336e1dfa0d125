"""MCP authorization (OAuth 2.1) for the protocol client. Imports nothing from Django.

``challenge`` reads a 401/403, ``discovery`` finds the authorization server, ``grants``
obtains and renews tokens, ``identity`` says who the client is, ``store`` keeps the
result behind a protocol the app implements, ``tokens`` gives an operation its bearer
token, and ``legs`` is the only module here that sends anything (through the wire's leg
machine).

The rule: this package imports ``nr_llm.mcp.wire`` only, never ``nr_llm.mcp.protocol`` (nor
Django). The protocol, and the app's OAuth side (``nr_llm.authorization``), use it through this
module alone: what they need is named here (tests/test_import_graph.py holds the app to it).
"""

from .challenge import Challenge, NonceChallenge, challenge_error, parse_challenge
from .discovery import AuthorizationServer, Discovered, ProtectedResource, discover, probe_challenge
from .dpop import DpopKey
from .grants import (
    AuthorizationStart,
    PendingAuthorization,
    client_credentials,
    finish_authorization,
    refresh,
    revoke,
    start_authorization,
)
from .identity import ClientConfig, GrantType, WallClock
from .legs import OAuthLegs
from .scopes import union_scopes
from .store import (
    ClientRegistration,
    Grant,
    GrantStore,
    MemoryGrantStore,
    ServerLocks,
    issued_for,
    lock_wait_seconds,
    wait_exhausted,
)
from .tokens import OAuthSettings, OperationTokens, SystemWallClock

__all__ = [
    "AuthorizationServer",
    "AuthorizationStart",
    "Challenge",
    "NonceChallenge",
    "challenge_error",
    "ClientConfig",
    "ClientRegistration",
    "Discovered",
    "DpopKey",
    "Grant",
    "GrantStore",
    "MemoryGrantStore",
    "OAuthLegs",
    "OAuthSettings",
    "OperationTokens",
    "PendingAuthorization",
    "ProtectedResource",
    "SystemWallClock",
    "WallClock",
    "client_credentials",
    "discover",
    "finish_authorization",
    "parse_challenge",
    "probe_challenge",
    "refresh",
    "start_authorization",
    # For the app's side: revoking, the grant types it configures, merging scopes, and keeping
    # one refresh per server at a time within an operation's budget.
    "GrantType",
    "revoke",
    "union_scopes",
    "issued_for",
    "ServerLocks",
    "lock_wait_seconds",
    "wait_exhausted",
]
