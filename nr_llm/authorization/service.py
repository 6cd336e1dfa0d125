"""Connect, callback and Disconnect: the network I/O of an operator's OAuth steps.

The admin's views call these and report what they return or raise; nothing here renders
HTML. Every exchange runs on the protocol client's OAuth legs, under one operation
deadline of the server's budget, so a slow authorization server cannot hang a request.

The pending authorization (state, PKCE verifier, pinned endpoints) is kept server-side,
encrypted, looked up by a hash of ``state``, bound to the staff user and the server,
valid for ``PENDING_SECONDS`` and deleted the moment a callback presents it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from ..conf import conf
from ..mcp import McpTransportError, MonotonicClock, OperationDeadline, clean
from ..mcp.oauth import (
    Challenge,
    ClientConfig,
    Grant,
    GrantType,
    OAuthLegs,
    OAuthSettings,
    SystemWallClock,
    client_credentials,
    finish_authorization,
    probe_challenge,
    revoke,
    start_authorization,
    union_scopes,
)
from ..mcp.oauth import (
    PendingAuthorization as Pending,
)
from ..models import McpServer, OAuthGrantType, OAuthRegistration
from ..servers import credentials
from . import identity_tokens
from .models import GrantFields, OAuthGrantRecord, PendingAuthorization, UserGrantRecord
from .store import DatabaseGrantStore

PENDING_SECONDS = 600


class ConnectRefused(Exception):
    """A Connect or callback that cannot go on; the message is safe to show an operator."""

    def __init__(self, message: str, server: McpServer | None = None) -> None:
        super().__init__(message)
        self.server = server


@dataclass(frozen=True)
class Connected:
    server: McpServer
    scopes: tuple[str, ...]
    expires_at: float | None


def redirect_uri() -> str:
    """The callback URL to pre-register at the authorization server (one for every server)."""
    return _public_url(reverse("admin:nr_llm_oauth_callback"))


def user_redirect_uri() -> str:
    """The callback of a user's own Connect (per-user servers; the site includes its URLs)."""
    return _public_url(reverse("nr_llm_connect_callback"))


def metadata_document_url(server: McpServer) -> str:
    return _public_url(reverse("nr_llm_oauth_client_metadata", args=[server.identifier]))


def _public_url(path: str) -> str:
    base = conf.PUBLIC_BASE_URL
    if not base:
        raise ConnectRefused(
            "NR_LLM_PUBLIC_BASE_URL is not set: the authorization server needs this site's public "
            "address to send the browser back to."
        )
    return base + path


#: The protocol client's name for each grant an operator can choose.
_GRANTS: dict[str, GrantType] = {
    OAuthGrantType.AUTHORIZATION_CODE: "authorization_code",
    OAuthGrantType.CLIENT_CREDENTIALS: "client_credentials",
    OAuthGrantType.ENTERPRISE: "enterprise",
    OAuthGrantType.WORKLOAD: "workload",
}


def client_config(
    server: McpServer, *, with_redirect: bool = True, user_id: int | None = None
) -> ClientConfig:
    """The operator's choices for ``server``, secrets decrypted for this one operation;
    ``user_id``: the user an enterprise-managed grant acts for (their ID token, from the hook)."""
    preregistered = server.oauth_registration == OAuthRegistration.PREREGISTERED
    metadata = server.oauth_registration == OAuthRegistration.METADATA_DOCUMENT
    authorization_code = server.oauth_grant_type == OAuthGrantType.AUTHORIZATION_CODE
    enterprise = server.oauth_grant_type == OAuthGrantType.ENTERPRISE
    workload = server.oauth_grant_type == OAuthGrantType.WORKLOAD
    return ClientConfig(
        grant=_GRANTS.get(server.oauth_grant_type, "client_credentials"),
        redirect_uri=(user_redirect_uri() if server.per_user else redirect_uri())
        if with_redirect and authorization_code
        else None,
        client_id=server.oauth_client_id or None if preregistered else None,
        issuer=server.oauth_issuer or None if preregistered else None,
        client_secret=_decrypted(server.oauth_client_secret_ciphertext) if preregistered else None,
        private_key_pem=_decrypted(server.oauth_private_key_ciphertext),
        key_id=server.oauth_key_id or None,
        client_metadata_url=metadata_document_url(server) if metadata else None,
        client_name=f"nr-llm ({server.identifier})",
        scopes=tuple(server.oauth_scopes.split()) or None,
        dpop=server.oauth_dpop,
        idp_token_endpoint=server.oauth_idp_token_endpoint or None if enterprise else None,
        idp_client_id=server.oauth_idp_client_id or None if enterprise else None,
        idp_client_secret=_decrypted(server.oauth_idp_client_secret_ciphertext) if enterprise else None,
        identity_token=identity_tokens.token_source(server, user_id) if enterprise else None,
        assertion_file=server.oauth_assertion_file or None if workload else None,
        assertion_env=server.oauth_assertion_env or None if workload else None,
    )


def oauth_settings(server: McpServer, user_id: int | None = None) -> OAuthSettings:
    """What an MCP operation against ``server`` needs to get and renew its token: the shared
    grant, or with ``user_id`` (a per-user server) that user's own."""
    return OAuthSettings(
        config=client_config(server, with_redirect=False, user_id=user_id), store=DatabaseGrantStore(user_id)
    )


def _scopes_to_keep(record: GrantFields | None) -> tuple[str, ...]:
    """What a reconnect must ask for beyond the configured scopes: what is granted now, and
    what a call found missing (a 403 insufficient_scope), else the step-up fails again."""
    if record is None:
        return ()
    return union_scopes(record.granted_scopes.split(), record.attention_scopes.split())


def _challenge(legs: OAuthLegs, server: McpServer, record: GrantFields | None) -> Challenge:
    """What the MCP server's own challenge says (its metadata URL, its scopes), as the
    specification starts a flow; the metadata URL an earlier grant found stands in when the
    server answers without one (a server may publish it only in its challenge)."""
    challenge = probe_challenge(legs, server.url) or Challenge()
    if challenge.resource_metadata:
        return challenge
    known = record.resource_metadata if record is not None and record.mcp_url == server.url else ""
    return dataclasses.replace(challenge, resource_metadata=known or None)


def _decrypted(ciphertext: str) -> str | None:
    return credentials.decrypt(ciphertext) if ciphertext else None


def _legs(server: McpServer) -> OAuthLegs:
    return OAuthLegs(
        server.identifier,
        OperationDeadline(server.budget_seconds, MonotonicClock(), server.identifier),
        conf.MCP_CONNECTION,
    )


def start_connect(server: McpServer, user: Any, *, for_user: bool = False) -> str:
    """Discover, register if needed, keep the pending authorization; the URL to send the browser to.

    ``for_user``: a user connecting their own account of a per-user server (an operator's
    Connect in the admin is for the shared grant only, and the other way round)."""
    if not server.uses_oauth or server.oauth_grant_type != OAuthGrantType.AUTHORIZATION_CODE:
        raise ConnectRefused(f"{server.identifier} does not use the OAuth authorization code grant.", server)
    if for_user != server.per_user:
        where = "by each user on the site" if server.per_user else "by an operator in the admin"
        raise ConnectRefused(f"{server.identifier} is connected {where}.", server)
    try:
        config = client_config(server)
        record: GrantFields | None
        if for_user:
            record = UserGrantRecord.objects.filter(server=server, user=user).first()
        else:
            record = OAuthGrantRecord.objects.filter(server=server).first()
        legs = _legs(server)
        with legs:
            challenge = _challenge(legs, server, record)
            started = start_authorization(
                legs,
                server.url,
                config,
                DatabaseGrantStore(),
                SystemWallClock(),
                resource_metadata=challenge.resource_metadata,
                challenged_scopes=challenge.scopes,
                previous_scopes=_scopes_to_keep(record),
            )
    except (McpTransportError, credentials.CredentialUnavailable) as exc:
        raise ConnectRefused(f"Cannot connect {server.identifier}: {exc}", server) from exc
    PendingAuthorization.objects.filter(
        created__lt=timezone.now() - timedelta(seconds=PENDING_SECONDS)
    ).delete()
    PendingAuthorization.objects.create(
        state_digest=_digest(started.pending.state),
        server=server,
        user=user,
        payload_ciphertext=credentials.encrypt(json.dumps(started.pending.as_dict())),
        created=timezone.now(),
        for_user=for_user,
    )
    return started.url


def finish_connect(user: Any, query: dict[str, str], *, for_user: bool = False) -> Connected:
    """Check the callback and exchange its code; raises ``ConnectRefused`` with nothing stored."""
    state = query.get("state", "")
    if not state:
        raise ConnectRefused("The authorization callback carried no state; nothing was stored.")
    with transaction.atomic():
        row = (
            PendingAuthorization.objects.select_for_update()
            .select_related("server")
            .filter(state_digest=_digest(state))
            .first()
        )
        if row is not None:
            # Single use: gone before anything else happens, whatever the outcome.
            row.delete()
    if row is None:
        raise ConnectRefused(
            "The authorization callback's state is unknown or was already used; nothing was stored. "
            "Press Connect again."
        )
    server = row.server
    if row.user_id != user.pk:
        raise ConnectRefused("This authorization was started by another user; nothing was stored.", server)
    if row.for_user != for_user or server.per_user != for_user:
        # A user's state at the admin's callback, or the other way round, or a mode changed meanwhile.
        raise ConnectRefused(
            "This authorization does not belong to this callback (or the server's mode changed); "
            "nothing was stored.",
            server,
        )
    if timezone.now() - row.created > timedelta(seconds=PENDING_SECONDS):
        raise ConnectRefused(
            f"The authorization of {server.identifier} took longer than {PENDING_SECONDS // 60} minutes "
            "and expired; nothing was stored. Press Connect again.",
            server,
        )
    if error := query.get("error"):
        said = clean(error, 60)
        detail = query.get("error_description")
        more = f" ({clean(detail, 200)})" if detail else ""
        raise ConnectRefused(
            f"The authorization server refused to connect {server.identifier}: {said}{more}. "
            "Nothing was stored.",
            server,
        )
    pending = Pending.from_dict(json.loads(credentials.decrypt(row.payload_ciphertext)))
    try:
        config = client_config(server)
        legs = _legs(server)
        with legs:
            grant = finish_authorization(
                legs,
                pending,
                config,
                SystemWallClock(),
                code=query.get("code") or None,
                state=state,
                iss=query.get("iss"),
            )
    except (McpTransportError, credentials.CredentialUnavailable) as exc:
        raise ConnectRefused(
            f"Connecting {server.identifier} failed: {exc} Nothing was stored.", server
        ) from exc
    return _keep(server, grant, user.pk if for_user else None)


def connect_client_credentials(server: McpServer) -> Connected:
    """Obtain a client credentials grant now (the runtime would on first use anyway)."""
    try:
        config = client_config(server)
        legs = _legs(server)
        store = DatabaseGrantStore()
        with legs:
            challenge = _challenge(legs, server, OAuthGrantRecord.objects.filter(server=server).first())
            grant = client_credentials(
                legs,
                server.url,
                config,
                store,
                SystemWallClock(),
                resource_metadata=challenge.resource_metadata,
                challenged_scopes=challenge.scopes,
            )
    except (McpTransportError, credentials.CredentialUnavailable) as exc:
        raise ConnectRefused(f"Connecting {server.identifier} failed: {exc}", server) from exc
    return _keep(server, grant)


def _keep(server: McpServer, grant: Grant, user_id: int | None = None) -> Connected:
    try:
        DatabaseGrantStore(user_id).save(server.identifier, grant)
    except McpTransportError as exc:
        message = f"Connecting {server.identifier} failed: {exc} Nothing was stored."
        raise ConnectRefused(message, server) from exc
    return Connected(server=server, scopes=grant.scopes, expires_at=grant.expires_at)


@dataclass(frozen=True)
class Disconnected:
    revoked: bool
    # Why revocation did not happen (not advertised, refused, unreachable); "" when it did.
    note: str


def disconnect(server: McpServer, user_id: int | None = None) -> Disconnected:
    """Forget the tokens (the shared grant, or with ``user_id`` that user's own), after revoking
    them where the authorization server advertises it."""
    store = DatabaseGrantStore(user_id)
    note = "no grant was stored"
    revoked = False
    try:
        grant = store.load(server.identifier)
    except McpTransportError as exc:
        grant, note = None, f"the stored grant could not be read, so nothing was revoked ({exc})"
    if grant is not None:
        try:
            revoked, note = _revoke(server, grant)
        except (McpTransportError, credentials.CredentialUnavailable) as exc:
            note = f"revocation failed ({exc})"
    store.forget(server.identifier)
    return Disconnected(revoked=revoked, note=note)


def _revoke(server: McpServer, grant: Grant) -> tuple[bool, str]:
    legs = _legs(server)
    with legs:
        done = revoke(legs, grant, client_config(server, with_redirect=False), SystemWallClock())
    return done.revoked, done.note


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()
