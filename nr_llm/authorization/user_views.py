"""A site's users connect their own accounts of per-user servers: Connect, callback, the
"connected accounts" page and Disconnect.

Thin, like the admin's pages: each calls ``service`` and reports with a message. All need a
signed-in user. Connect is a GET on purpose: it is the URL a call's ``needs_authorization``
hands out, and it changes nothing until the callback, which finishes only for the very
user and server the state was issued to, once. Disconnect is a POST (CSRF-checked).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..models import McpServer, OAuthGrantType, OAuthMode, UserGrantRecord
from . import service
from .actors import actor_id
from .columns import REASONS


def _per_user_server(identifier: str) -> McpServer:
    return get_object_or_404(
        McpServer, identifier=identifier, enabled=True, auth_placement="oauth", oauth_mode=OAuthMode.PER_USER
    )


def _user_id(request: HttpRequest) -> int:
    # Never None past login_required; checked anyway, since None would mean the shared grant.
    user_id = actor_id(request.user)
    if user_id is None:
        raise PermissionDenied
    return user_id


def _accounts_page() -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("nr_llm_connected_accounts"))


@login_required
@require_GET
def connect(request: HttpRequest, identifier: str) -> HttpResponse:
    server = _per_user_server(identifier)
    try:
        return HttpResponseRedirect(service.start_connect(server, request.user, for_user=True))
    except service.ConnectRefused as exc:
        messages.error(request, str(exc))
        return _accounts_page()


@login_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    query = {key: request.GET.get(key, "") for key in ("state", "code", "iss", "error", "error_description")}
    if "iss" not in request.GET:
        del query["iss"]  # absent and empty differ for RFC 9207
    try:
        done = service.finish_connect(request.user, query, for_user=True)
    except service.ConnectRefused as exc:
        messages.error(request, str(exc))
        return _accounts_page()
    scopes = " ".join(done.scopes) or "none named"
    messages.success(request, f"Connected your account at {done.server.name} (scopes: {scopes}).")
    return _accounts_page()


@login_required
@require_POST
def disconnect(request: HttpRequest, identifier: str) -> HttpResponse:
    server = get_object_or_404(McpServer, identifier=identifier, auth_placement="oauth")
    outcome = service.disconnect(server, _user_id(request))
    done = "revoked and forgotten" if outcome.revoked else f"forgotten ({outcome.note})"
    messages.success(request, f"Disconnected your account at {server.name}: {done}.")
    return _accounts_page()


@login_required
@require_GET
def connected_accounts(request: HttpRequest) -> HttpResponse:
    """Every enabled per-user server, and whether this user has connected it. Never a token."""
    servers = (
        McpServer.objects.filter(enabled=True, auth_placement="oauth", oauth_mode=OAuthMode.PER_USER)
        # Enterprise-managed servers act through the user's sign-in: there is nothing to connect.
        .exclude(oauth_grant_type=OAuthGrantType.ENTERPRISE)
        .order_by("name")
    )
    grants = {
        record.server_id: record
        for record in UserGrantRecord.objects.filter(user_id=_user_id(request)).only(
            "server_id", "access_token_ciphertext", "granted_scopes", "connected_at", "attention_reason"
        )
    }
    accounts: list[dict[str, Any]] = []
    for server in servers:
        record = grants.get(server.pk)
        connected = record is not None and record.has_tokens
        accounts.append(
            {
                "server": server,
                "connected": connected,
                "scopes": record.granted_scopes.split() if record is not None else [],
                "connected_at": record.connected_at if record is not None else None,
                "attention": REASONS.get(record.attention_reason, record.attention_reason)
                if record is not None and record.attention_reason
                else "",
                "connect_url": reverse("nr_llm_connect", args=[server.identifier]),
                "disconnect_url": reverse("nr_llm_disconnect", args=[server.identifier]),
            }
        )
    return render(request, "nr_llm/authorization/connected_accounts.html", {"accounts": accounts})
