"""An OAuth-protected MCP server (official Python SDK) that checks tokens by introspection.

``python -m tests.peers.oauth_mcp_server --issuer URL --introspection-url URL
--client-id ID --client-secret-env VAR [--required-scope S] [--admin-scope S] [--stateful]``

The SDK's own resource-server pieces do the work: ``AuthSettings`` with a ``TokenVerifier``
gives the RFC 9728 document at ``/.well-known/oauth-protected-resource/mcp`` (naming the
issuer), and a 401 with ``WWW-Authenticate: Bearer … resource_metadata="…"`` to a request
without a valid token. The verifier asks the authorization server (RFC 7662) on every
request, so a revoked token is refused at once. A token must be bound to this server by
RFC 8707 (its introspected ``aud`` names the /mcp URL), as the MCP specification requires.

One tool needs a further scope: calling it with a token that lacks the scope is answered
HTTP 403 ``insufficient_scope`` with the scopes to ask for, which is how an MCP server asks a
client to step up. Binds 127.0.0.1 on an OS-chosen port and prints ``PORT <n>``.

``--certfile F --keyfile K --public-host NAME`` serves https with that certificate at
``https://NAME:<port>/mcp`` (its resource URL), and ``GET /sni`` lists each ClientHello's
server name. ``--introspection-ca FILE --introspection-address ADDR`` reach a TLS
authorization server by its name at ADDR (tests/peers/named.py), trusting FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import requests

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 1024 * 1024


class IntrospectionVerifier:
    """A ``TokenVerifier``: RFC 7662 introspection with the resource server's own client."""

    def __init__(
        self,
        introspection_url: str,
        client_id: str,
        client_secret: str,
        resource: str,
        session: requests.Session | None = None,
    ) -> None:
        self.introspection_url = introspection_url
        self.credentials = (client_id, client_secret)
        self.resource = resource
        self.session = session or requests.Session()

    async def verify_token(self, token: str) -> Any:
        import anyio
        from mcp.server.auth.provider import AccessToken

        answer = await anyio.to_thread.run_sync(self._introspect, token)
        if not answer or answer.get("active") is not True:
            return None
        audiences = answer.get("aud") or []
        if isinstance(audiences, str):
            audiences = [audiences]
        # The SDK refuses a token whose `resource` is not this server's URL; hand it the
        # audience that names this server, else any other (which it will then refuse).
        matching = [aud for aud in audiences if str(aud).rstrip("/") == self.resource.rstrip("/")]
        resource = matching[0] if matching else (audiences[0] if audiences else None)
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id", "")),
            scopes=str(answer.get("scope", "")).split(),
            expires_at=int(answer["exp"]) if "exp" in answer else None,
            resource=resource,
            subject=answer.get("username"),
        )

    def _introspect(self, token: str) -> dict[str, Any] | None:
        try:
            response = self.session.post(
                self.introspection_url,
                data={"token": token},
                auth=self.credentials,
                timeout=10,
                allow_redirects=False,
            )
        except requests.RequestException:
            return None
        if response.status_code != 200:
            return None
        try:
            answer = response.json()
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None


class ToolScopes:
    """HTTP 403 ``insufficient_scope`` for a ``tools/call`` of a tool whose scope the token lacks.

    The SDK checks one set of scopes for the whole endpoint; per-tool scopes (and the step-up
    answer MCP clients expect) are added here, between its authentication and its transport.
    """

    def __init__(self, app: Any, tool_scopes: dict[str, list[str]], resource_metadata_url: str) -> None:
        self.app = app
        self.tool_scopes = tool_scopes
        self.resource_metadata_url = resource_metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

        user = scope.get("user")
        if scope["type"] != "http" or scope["method"] != "POST" or not isinstance(user, AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:
            await _answer(send, 413, {"error": "request body too large"})
            return
        needed = self._needed(body, set(user.scopes))
        if needed:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(needed)}", '
                f'resource_metadata="{self.resource_metadata_url}", '
                f'error_description="This tool needs the scopes {" ".join(needed)}"'
            )
            await _answer(
                send, 403, {"error": "insufficient_scope", "scope": " ".join(needed)}, challenge=challenge
            )
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _needed(self, body: bytes, granted: set[str]) -> list[str]:
        try:
            message = json.loads(body)
        except ValueError:
            return []
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict) or item.get("method") != "tools/call":
                continue
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            required = self.tool_scopes.get(name) if isinstance(name, str) else None
            if required and not set(required) <= granted:
                return required
        return []


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Send, status: int, body: dict[str, Any], challenge: str | None = None) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if challenge:
        headers.append((b"www-authenticate", challenge.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def build_app(
    *,
    issuer: str,
    mcp_url: str,
    verifier: IntrospectionVerifier,
    required_scope: str,
    admin_scope: str,
    stateless: bool,
    public_host: str = "127.0.0.1",
) -> Any:
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.routes import build_resource_metadata_url
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import AnyHttpUrl
    from starlette.routing import Route

    server = MCPServer(
        "nr-llm OAuth test peer",
        version="1.0.0",
        token_verifier=verifier,
        # Validated from strings, not AnyHttpUrl objects: the model's own URL config keeps the
        # issuer without a trailing slash, so the RFC 9728 document names it exactly as the
        # authorization server's metadata does (issuers compare as strings).
        auth=AuthSettings.model_validate(
            {
                "issuer_url": issuer,
                "resource_server_url": mcp_url,
                "required_scopes": [required_scope],
                "validate_token_resource": True,
            }
        ),
    )

    @server.tool()
    async def whoami() -> dict[str, Any]:
        """Who the bearer token speaks for: client, user, scopes, resource."""
        token = get_access_token()
        if token is None:  # unreachable behind the SDK's RequireAuthMiddleware
            raise ToolError("no access token")
        return {
            "client_id": token.client_id,
            "subject": token.subject,
            "scopes": sorted(token.scopes),
            "resource": token.resource,
        }

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def admin_report() -> str:
        """An administrative report: needs the administrative scope (step-up)."""
        token = get_access_token()
        # ToolScopes answers 403 before the call gets here; this is the tool's own guard.
        if token is None or admin_scope not in token.scopes:
            raise ToolError(f"the {admin_scope} scope is required")
        return f"admin report for {token.subject or token.client_id}"

    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1", "localhost", "[::1]", public_host]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:*" for host in hosts],
        allowed_origins=[f"{scheme}://{host}:*" for host in hosts for scheme in ("http", "https")],
    )
    app = server.streamable_http_app(
        stateless_http=stateless, json_response=stateless, transport_security=security
    )
    metadata_url = str(build_resource_metadata_url(AnyHttpUrl(mcp_url)))
    tool_scopes = {"admin_report": [required_scope, admin_scope]}
    for route in app.router.routes:
        if isinstance(route, Route) and route.path == "/mcp":
            route.app = ToolScopes(route.app, tool_scopes, metadata_url)
            break
    else:  # pragma: no cover - the SDK changed its routes
        raise RuntimeError("the SDK's app has no /mcp route")
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--introspection-url", required=True)
    parser.add_argument("--client-id", required=True)
    # The secret comes through the environment: a command line is visible to every process.
    parser.add_argument("--client-secret-env", default="OAUTH_MCP_INTROSPECTION_SECRET")
    parser.add_argument("--required-scope", default="mcp:tools")
    parser.add_argument("--admin-scope", default="mcp:admin")
    parser.add_argument("--stateful", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("--public-host", default="127.0.0.1")
    parser.add_argument("--introspection-ca")
    parser.add_argument("--introspection-address", default="127.0.0.1")
    args = parser.parse_args()

    import logging

    import uvicorn

    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("mcp").setLevel(logging.ERROR)

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    mcp_url = f"{'https' if args.certfile else 'http'}://{args.public_host}:{port}/mcp"
    session = None
    if args.introspection_ca:
        from urllib.parse import urlsplit

        from tests.peers.named import named_session

        named = urlsplit(args.introspection_url).hostname or ""
        session = named_session({named: args.introspection_address}, args.introspection_ca)
    verifier = IntrospectionVerifier(
        args.introspection_url, args.client_id, os.environ[args.client_secret_env], mcp_url, session
    )
    app = build_app(
        issuer=args.issuer,
        mcp_url=mcp_url,
        verifier=verifier,
        required_scope=args.required_scope,
        admin_scope=args.admin_scope,
        stateless=not args.stateful,
        public_host=args.public_host,
    )
    names: list[str | None] = []
    print(f"PORT {port}", flush=True)
    config = uvicorn.Config(
        _sni_route(app, names),
        log_level="warning",
        lifespan="on",
        ssl_certfile=args.certfile,
        ssl_keyfile=args.keyfile,
    )
    if args.certfile:
        config.load()  # builds the SSLContext now, so that it can note each ClientHello's name
        assert config.ssl is not None
        config.ssl.sni_callback = lambda _sock, name, _context: names.append(name)
    uvicorn.Server(config).run(sockets=[sock])


def _sni_route(app: Any, names: list[str | None]) -> Any:
    """``app`` with ``GET /sni``: the server names the TLS ClientHellos asked for."""

    async def wrapper(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/sni":
            body = json.dumps(names).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapper


if __name__ == "__main__":
    main()
