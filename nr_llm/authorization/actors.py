"""Whose grant an operation uses: the server's shared one, or on a per-user server its actor's own.

``resolve(server, actor)`` is called before anything is sent. On a per-user server it returns
an ``Endpoint`` whose grant store reads and renews that actor's row only, or a
``NeedsAuthorization`` when the actor has no usable grant: no actor (anonymous, a script), not
connected yet, or a grant a call found unusable without the person (refused renewal, more
scopes). Then the server is not contacted at all; the caller records the outcome and hands the
person ``connect_url``. Nothing here falls back to the shared grant: a per-user server never
acts as anyone but its actor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from django.db.models import Q
from django.shortcuts import resolve_url
from django.urls import reverse
from django.utils import timezone

from ..conf import conf
from ..mcp import Endpoint
from ..models import McpServer, OAuthGrantType
from ..servers.endpoints import endpoint_for
from . import identity_tokens
from .models import UserGrantRecord

# "sign_in": an enterprise-managed server, and the site's hook has no ID token for the user.
NeedsReason = Literal["no_actor", "not_connected", "reconnect", "sign_in"]

_WHY = {
    "no_actor": "it acts as the signed-in user, and this call has none",
    "not_connected": "the user has not connected their account yet",
    "reconnect": "the user's connection must be renewed",
    "sign_in": "it acts with the user's sign-in at their organisation, and the site has none for them now",
}


@dataclass(frozen=True)
class NeedsAuthorization:
    """The typed answer for a call that was not sent: who must do what, and where."""

    server: str
    reason: NeedsReason
    # Absolute (on NR_LLM_PUBLIC_BASE_URL) when that is set, else the site-relative path.
    connect_url: str

    def model_text(self, tool_name: str) -> str:
        """One sentence for the model: not run, why, and that retrying will not help."""
        if self.reason == "sign_in":
            return (
                f"The tool {tool_name!r} was not run: {_WHY[self.reason]}; the user must sign in to "
                f"the site again at {self.connect_url} first, so do not retry it now."
            )
        return (
            f"The tool {tool_name!r} was not run: {_WHY[self.reason]}; the user must connect their "
            f"account at {self.connect_url} first, so do not retry it now."
        )


def actor_id(actor: Any) -> int | None:
    """The user's primary key, or None for no actor, an anonymous user or an unsaved one."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        return None
    pk = getattr(actor, "pk", None)
    return pk if isinstance(pk, int) else None


def connect_url(server: McpServer) -> str:
    path = reverse("nr_llm_connect", args=[server.identifier])
    base = conf.PUBLIC_BASE_URL
    return base + path if base else path


def sign_in_url() -> str:
    """The site's login page (``LOGIN_URL``): where a user gets a fresh ID token."""
    path = resolve_url(settings.LOGIN_URL)
    base = conf.PUBLIC_BASE_URL
    return base + path if base and path.startswith("/") else path


def resolve(server: McpServer, actor: Any) -> Endpoint | NeedsAuthorization:
    """The endpoint to call ``server`` with as ``actor``, or why it must not be called."""
    return resolve_user(server, actor_id(actor))


def resolve_user(server: McpServer, user_id: int | None) -> Endpoint | NeedsAuthorization:
    """``resolve`` for a user known by key (a resumed call's recorded actor)."""
    if not server.per_user:
        return endpoint_for(server)
    if user_id is None:
        return NeedsAuthorization(server.identifier, "no_actor", connect_url(server))
    row = (
        UserGrantRecord.objects.filter(server=server, user_id=user_id)
        .values_list("access_token_ciphertext", "attention_reason")
        .first()
    )
    if server.oauth_grant_type == OAuthGrantType.ENTERPRISE:
        return _enterprise(server, user_id, usable=row is not None and bool(row[0]) and not row[1])
    if row is None or not row[0]:
        return NeedsAuthorization(server.identifier, "not_connected", connect_url(server))
    if row[1]:
        return NeedsAuthorization(server.identifier, "reconnect", connect_url(server))
    return endpoint_for(server, user_id=user_id)


def _enterprise(server: McpServer, user_id: int, *, usable: bool) -> Endpoint | NeedsAuthorization:
    """No Connect here: the grant is obtained inside the call from the user's ID token. A usable
    grant is used as it is; without one (or with one that expired and cannot be refreshed, so
    the call would need a new ID-JAG), the hook is asked first, and no token means the user
    must sign in again (the server is not contacted)."""
    if usable:
        usable = (
            UserGrantRecord.objects.filter(server=server, user_id=user_id)
            .filter(
                Q(expires_at__isnull=True)
                | Q(expires_at__gt=timezone.now())
                | ~Q(refresh_token_ciphertext="")
            )
            .exists()
        )
    if not usable and identity_tokens.identity_token(server, user_id) is None:
        return NeedsAuthorization(server.identifier, "sign_in", sign_in_url())
    return endpoint_for(server, user_id=user_id)
