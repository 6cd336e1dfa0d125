"""A scripted protected resource and authorization server on ``responses``, for unit tests.

Literal documentation addresses (no DNS lookup; ``responses`` answers for them), a fake
monotonic clock advanced per leg and a fake wall clock, and every request recorded with
its URL, form and headers, so tests can say exactly which secret went where.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import responses

from nr_llm.mcp import ConnectionSettings
from nr_llm.mcp.oauth import OAuthLegs
from nr_llm.mcp.wire.deadline import OperationDeadline

from ..scripted import FakeClock

MCP = "https://192.0.2.1/mcp"
MCP_ORIGIN = "https://192.0.2.1"
ISSUER = "https://192.0.2.2"
PRM_PATH = f"{MCP_ORIGIN}/.well-known/oauth-protected-resource/mcp"
PRM_ROOT = f"{MCP_ORIGIN}/.well-known/oauth-protected-resource"
AS_METADATA = f"{ISSUER}/.well-known/oauth-authorization-server"
TOKEN = f"{ISSUER}/token"
REGISTER = f"{ISSUER}/register"
AUTHORIZE = f"{ISSUER}/authorize"


class FakeWall:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


@dataclass
class Sent:
    method: str
    url: str
    form: dict[str, str]
    json: dict[str, Any] | None
    headers: dict[str, str]
    timeout: Any


def as_metadata(**overrides: Any) -> dict[str, Any]:
    document = {
        "issuer": ISSUER,
        "authorization_endpoint": AUTHORIZE,
        "token_endpoint": TOKEN,
        "registration_endpoint": REGISTER,
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        "authorization_response_iss_parameter_supported": True,
    }
    document.update(overrides)
    return {k: v for k, v in document.items() if v is not None}


@dataclass
class World:
    mock: responses.RequestsMock
    clock: FakeClock
    seconds_per_leg: float = 0.0
    sent: list[Sent] = field(default_factory=list)
    tokens_issued: int = 0
    token_answers: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def serve(self, method: str, url: str, status: int = 200, body: Any = None, **headers: str) -> None:
        def answer(request: Any) -> tuple[int, dict[str, str], str]:
            self.record(request)
            payload = body if isinstance(body, str) else json.dumps(body)
            return status, {"Content-Type": "application/json", **headers}, payload

        self.mock.add_callback(method, url, callback=answer)

    def serve_discovery(
        self, prm: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        self.serve(
            "GET",
            PRM_PATH,
            body=prm if prm is not None else {"resource": MCP, "authorization_servers": [ISSUER]},
        )
        self.serve("GET", AS_METADATA, body=metadata if metadata is not None else as_metadata())

    def serve_token_endpoint(self) -> None:
        """Answers ``token_answers`` in order, else a fresh bearer token with rotation."""

        def answer(request: Any) -> tuple[int, dict[str, str], str]:
            self.record(request)
            if self.token_answers:
                status, payload = self.token_answers.pop(0)
                return status, {"Content-Type": "application/json"}, json.dumps(payload)
            self.tokens_issued += 1
            n = self.tokens_issued
            payload = {
                "access_token": f"access-{n}",
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": f"refresh-{n}",
            }
            return 200, {"Content-Type": "application/json"}, json.dumps(payload)

        self.mock.add_callback("POST", TOKEN, callback=answer)

    def serve_registration(self, **extra: Any) -> None:
        self.serve("POST", REGISTER, 201, {"client_id": "dyn-client", "client_secret": "dyn-secret", **extra})

    def record(self, request: Any) -> None:
        body = request.body or b""
        if isinstance(body, bytes):
            body = body.decode()
        kind = request.headers.get("Content-Type", "")
        self.sent.append(
            Sent(
                request.method,
                request.url,
                dict(parse_qsl(body)) if "form" in kind else {},
                json.loads(body) if "json" in kind and body else None,
                dict(request.headers),
                request.req_kwargs.get("timeout"),
            )
        )
        self.clock.advance(self.seconds_per_leg)

    def urls(self) -> list[str]:
        return [s.url for s in self.sent]


def legs_for(deadline: OperationDeadline, *, allow_private_networks: bool = True) -> OAuthLegs:
    return OAuthLegs("demo", deadline, ConnectionSettings(allow_private_networks=allow_private_networks))
