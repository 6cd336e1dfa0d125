"""A JSON line per request to an OAuth endpoint, for tests that count what reached the server.

Issue-level assertions such as "exactly one refresh request reached the authorization
server" need the server's own count, not the client's. Each line names the endpoint, the
grant type of a token request, the client and the answer's status; the refresh token a
request presented appears only as a short SHA-256 fingerprint (never the token itself).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from urllib.parse import unquote

from django.http import HttpRequest, HttpResponse

from tests.peers.oauth_site import fingerprint
from tests.peers.oauth_site.settings import REQUEST_LOG

ENDPOINTS = {
    "/token/": "token",
    "/introspect/": "introspect",
    "/revoke_token/": "revoke",
    "/register/": "register",
    "/authorize/": "authorize",
}


def _client_id(request: HttpRequest) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(header[6:]).decode()
        except (ValueError, UnicodeDecodeError):
            return None
        return unquote(decoded.partition(":")[0])
    value = request.POST.get("client_id") or request.GET.get("client_id")
    return value or None


class RequestLogMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        endpoint = ENDPOINTS.get(request.path)
        if endpoint is not None:
            self._write(request, response, endpoint)
        return response

    def _write(self, request: HttpRequest, response: HttpResponse, endpoint: str) -> None:
        entry: dict[str, object] = {
            "time": time.time(),
            "endpoint": endpoint,
            "method": request.method,
            "status": response.status_code,
            "client_id": _client_id(request),
            "pid": os.getpid(),
        }
        if endpoint == "token" and request.method == "POST":
            entry["grant_type"] = request.POST.get("grant_type")
            refresh_token = request.POST.get("refresh_token")
            if refresh_token:
                entry["refresh_token_fingerprint"] = fingerprint(refresh_token)
        line = (json.dumps(entry) + "\n").encode()
        # One write of a short line on an O_APPEND descriptor: lines from several worker
        # threads or processes never interleave.
        descriptor = os.open(REQUEST_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)
