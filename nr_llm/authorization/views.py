"""The admin's Connect, callback and Disconnect pages, and the client metadata document.

Thin: each calls ``service`` and reports with a message. Connect and Disconnect are
POST-only (the admin's CSRF protection covers them) and need the change permission; the
callback is a GET from the authorization server's redirect, under the admin's login, and
trusts nothing from its query string beyond the state it looks up.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404
from django.urls import reverse

from ..models import McpServer, OAuthGrantType, OAuthRegistration
from . import service


class McpServerAdmin(Protocol):
    """What these pages need of the server admin; a protocol, so this module imports no admin
    (the admin imports it to route to these pages)."""

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: Any = None
    ) -> McpServer | None: ...

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool: ...

    def message_user(
        self, request: HttpRequest, message: str, level: int = ..., *args: Any, **kwargs: Any
    ) -> None: ...


def _change_page(server: McpServer) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("admin:nr_llm_mcpserver_change", args=[server.pk]))


def _server_for_change(admin: McpServerAdmin, request: HttpRequest, object_id: str) -> McpServer:
    if request.method != "POST":
        raise _NotPost
    server = admin.get_object(request, object_id)
    if server is None:
        raise Http404("No such MCP server.")
    if not admin.has_change_permission(request, server):
        raise PermissionDenied
    return server


class _NotPost(Exception):
    pass


def connect(admin: McpServerAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    try:
        server = _server_for_change(admin, request, object_id)
    except _NotPost:
        return HttpResponseNotAllowed(["POST"])
    try:
        # Grants the client obtains itself (a workload's JWT too): fetched now, no browser.
        if server.oauth_grant_type in (OAuthGrantType.CLIENT_CREDENTIALS, OAuthGrantType.WORKLOAD):
            done = service.connect_client_credentials(server)
            admin.message_user(request, connected_message(done), messages.SUCCESS)
            return _change_page(server)
        return HttpResponseRedirect(service.start_connect(server, request.user))
    except service.ConnectRefused as exc:
        admin.message_user(request, str(exc), messages.ERROR)
        return _change_page(server)


def callback(admin: McpServerAdmin, request: HttpRequest) -> HttpResponse:
    query = {key: request.GET.get(key, "") for key in ("state", "code", "iss", "error", "error_description")}
    if "iss" not in request.GET:
        del query["iss"]  # absent and empty differ for RFC 9207
    try:
        done = service.finish_connect(request.user, query)
    except service.ConnectRefused as exc:
        admin.message_user(request, str(exc), messages.ERROR)
        if exc.server is not None:
            return _change_page(exc.server)
        return HttpResponseRedirect(reverse("admin:nr_llm_mcpserver_changelist"))
    admin.message_user(request, connected_message(done), messages.SUCCESS)
    return _change_page(done.server)


def disconnect(admin: McpServerAdmin, request: HttpRequest, object_id: str) -> HttpResponse:
    try:
        server = _server_for_change(admin, request, object_id)
    except _NotPost:
        return HttpResponseNotAllowed(["POST"])
    outcome = service.disconnect(server)
    if outcome.revoked:
        admin.message_user(
            request, f"Disconnected {server.identifier}: tokens revoked and forgotten.", messages.SUCCESS
        )
    else:
        admin.message_user(
            request,
            f"Disconnected {server.identifier}: tokens forgotten ({outcome.note}).",
            messages.WARNING if "failed" in outcome.note or "refused" in outcome.note else messages.INFO,
        )
    return _change_page(server)


def connected_message(done: service.Connected) -> str:
    scopes = " ".join(done.scopes) or "none named"
    if done.expires_at is None:
        expires = "does not say"
    else:
        from datetime import UTC, datetime

        expires = f"{datetime.fromtimestamp(done.expires_at, tz=UTC):%Y-%m-%d %H:%M:%S} UTC"
    return f"Connected {done.server.identifier}: scopes {scopes}, expires {expires}."


def client_metadata_document(request: HttpRequest, identifier: str) -> JsonResponse:
    """The client ID metadata document of one server's client (public: the AS fetches it)."""
    server = get_object_or_404(
        McpServer,
        identifier=identifier,
        auth_placement="oauth",
        oauth_registration=OAuthRegistration.METADATA_DOCUMENT,
    )
    url = service.metadata_document_url(server)
    document = {
        "client_id": url,
        "client_name": f"nr-llm ({server.identifier})",
        "redirect_uris": [service.user_redirect_uri() if server.per_user else service.redirect_uri()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    return JsonResponse(document)
