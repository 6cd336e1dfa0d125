"""Real OAuth peers for the tests: an authorization server and an OAuth-protected MCP server.

``oauth_peers`` (session fixture, registered in tests/conftest.py) starts
django-oauth-toolkit in a second Django site under gunicorn (tests/peers/oauth_server.py)
and the official SDK's MCP server checking its tokens by introspection
(tests/peers/oauth_mcp_server.py), both on 127.0.0.1 with OS-chosen ports, and stops both
at the end of the session. ``start_oauth_peers()`` starts a separate pair, e.g. with a
short access-token lifetime, or (``tls=``) both over https by name: the authorization
server at ``https://auth.test:<port>`` and the MCP server at ``https://mcp.test:<port>/mcp``,
with certificates of the session's test CA (tests/tls.py). Secrets are chosen per run. See
tests/peers/README.md.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import json
import secrets
import socket
import sys
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import pytest
import requests

from tests.peers import announced_port, spawned
from tests.peers.oauth_site import fingerprint as fingerprint  # the request log's name for a token
from tests.tls import NAMES, TestAuthority

# Loopback redirect URIs match on any port (RFC 8252 §7.3, which the toolkit applies), so a
# client registered with http://127.0.0.1/callback accepts http://127.0.0.1:<port>/callback.
DEFAULT_REDIRECT_URIS = ("http://127.0.0.1/callback",)
REQUEST_SECONDS = 10.0
STARTUP_SECONDS = 30.0


@dataclasses.dataclass(frozen=True)
class OAuthClient:
    """A client registered at the authorization server (client_secret None: a public client)."""

    client_id: str
    client_secret: str | None
    grant_type: str  # "authorization_code" or "client_credentials"
    redirect_uris: tuple[str, ...] = ()

    def __repr__(self) -> str:
        # Never print the secret (test failure output lands in CI logs).
        return f"OAuthClient({self.client_id!r}, {self.grant_type}, public={self.client_secret is None})"


@dataclasses.dataclass(frozen=True)
class AuthorizationServer:
    """django-oauth-toolkit on 127.0.0.1, with its seeded user and clients."""

    issuer: str  # also the base URL; no trailing slash
    username: str
    password: str = dataclasses.field(repr=False)
    public_client: OAuthClient  # authorization code + PKCE, no secret
    confidential_client: OAuthClient  # authorization code + PKCE, with a secret
    machine_client: OAuthClient  # client credentials
    resource_server_client: OAuthClient  # the MCP server's, for introspection
    access_token_seconds: int
    directory: Path
    # Further people with accounts there, by username (their passwords).
    other_users: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def metadata_url(self) -> str:
        return f"{self.issuer}/.well-known/oauth-authorization-server"

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/authorize/"

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token/"

    @property
    def introspection_endpoint(self) -> str:
        return f"{self.issuer}/introspect/"

    @property
    def revocation_endpoint(self) -> str:
        return f"{self.issuer}/revoke_token/"

    @property
    def registration_endpoint(self) -> str:
        return f"{self.issuer}/register/"

    @property
    def login_url(self) -> str:
        return f"{self.issuer}/accounts/login/"

    @property
    def request_log(self) -> Path:
        return self.directory / "requests.jsonl"

    def server_names_seen(self) -> list[str | None]:
        """The SNI of every TLS ClientHello that reached the server (over https only)."""
        log = self.directory / "sni.jsonl"
        if not log.exists():
            return []
        return [json.loads(line)["sni"] for line in log.read_text().splitlines() if line.strip()]

    def requests_seen(
        self, endpoint: str | None = None, grant_type: str | None = None
    ) -> list[dict[str, Any]]:
        """What reached the server, one dict per request to /token/, /introspect/, /revoke_token/,
        /register/ or /authorize/: time, endpoint, method, status, client_id, pid, and for a
        token request grant_type (and refresh_token_fingerprint, see fingerprint())."""
        if not self.request_log.exists():
            return []
        entries = [json.loads(line) for line in self.request_log.read_text().splitlines() if line.strip()]
        return [
            entry
            for entry in entries
            if (endpoint is None or entry["endpoint"] == endpoint)
            and (grant_type is None or entry.get("grant_type") == grant_type)
        ]

    def token_requests(self, grant_type: str | None = None) -> int:
        """How many token-endpoint requests (of that grant type) reached the server so far.

        The log is shared by the session: compare counts before and after, not with zero.
        """
        return len(self.requests_seen("token", grant_type))

    def approve(
        self,
        authorization_url: str,
        *,
        session: requests.Session | None = None,
        allow: bool = True,
        username: str | None = None,
    ) -> str:
        """Play the user's browser: log in as the seeded user, answer the consent page.

        Returns the Location the server redirects to (the client's redirect URI with ``code``,
        ``state`` and ``iss``, or ``error``), without following it. Raises AssertionError
        when the server answers anything else (e.g. an error page for a bad request).
        """
        # A caller's session is kept open for its next step; a fresh one is closed here.
        with contextlib.nullcontext(session) if session is not None else requests.Session() as browser:
            who = username or self.username
            password = self.other_users[who] if username and username != self.username else self.password
            return sign_in_and_consent(browser, authorization_url, self.login_url, who, password, allow=allow)

    def register_client(
        self,
        redirect_uris: list[str],
        *,
        confidential: bool = True,
        grant_type: str = "authorization_code",
        name: str = "registered by a test",
    ) -> OAuthClient:
        """A new client by dynamic registration (RFC 7591), e.g. for a redirect URI of one test."""
        grant_types = [grant_type, "refresh_token"] if grant_type == "authorization_code" else [grant_type]
        answer = requests.post(
            self.registration_endpoint,
            json={
                "client_name": name,
                "redirect_uris": redirect_uris,
                "grant_types": grant_types,
                "token_endpoint_auth_method": "client_secret_basic" if confidential else "none",
            },
            timeout=REQUEST_SECONDS,
        )
        if answer.status_code != 201:
            raise AssertionError(f"registration refused (HTTP {answer.status_code}): {answer.text[:500]}")
        registered = answer.json()
        return OAuthClient(
            client_id=registered["client_id"],
            client_secret=registered.get("client_secret"),
            grant_type=grant_type,
            redirect_uris=tuple(registered["redirect_uris"]),
        )

    def authorization_code_tokens(
        self,
        client: OAuthClient,
        *,
        resource: str,
        scope: str = "mcp:tools",
        redirect_uri: str = "http://127.0.0.1:9/callback",
    ) -> dict[str, Any]:
        """A whole authorization-code + PKCE grant over HTTP; returns the token response.

        For tests that need a real access and refresh token without a browser (e.g. to seed
        a stored grant). The redirect is caught, never followed: nothing listens at it.
        """
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(12)
        query = urlencode(
            {
                "response_type": "code",
                "client_id": client.client_id,
                "redirect_uri": redirect_uri,
                "scope": scope,
                "state": state,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": resource,
            }
        )
        callback = parse_qs(urlsplit(self.approve(f"{self.authorization_endpoint}?{query}")).query)
        if callback.get("state") != [state] or "code" not in callback:
            raise AssertionError(f"no code in the redirect: {sorted(callback)}")
        data = {
            "grant_type": "authorization_code",
            "code": callback["code"][0],
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": resource,
        }
        secret = client.client_secret
        auth = (client.client_id, secret) if secret is not None else None
        if secret is None:
            data["client_id"] = client.client_id
        answer = requests.post(self.token_endpoint, data=data, auth=auth, timeout=REQUEST_SECONDS)
        if answer.status_code != 200:
            raise AssertionError(f"token request refused (HTTP {answer.status_code}): {answer.text[:500]}")
        tokens: dict[str, Any] = answer.json()
        return tokens


@dataclasses.dataclass(frozen=True)
class ProtectedMcpServer:
    """The SDK's MCP server, behind the authorization server's tokens."""

    url: str  # http://127.0.0.1:<port>/mcp, also the RFC 8707 resource
    resource_metadata_url: str
    required_scope: str  # every request
    admin_scope: str  # admin_report also needs this one (step-up)


@dataclasses.dataclass(frozen=True)
class OAuthPeers:
    auth: AuthorizationServer
    mcp: ProtectedMcpServer


def connect_on_legs(
    legs: Any, peers: OAuthPeers, config: Any, store: Any, *, browser: requests.Session | None = None
) -> tuple[Any, str]:
    """The operator's Connect on the client's own OAuth legs (``nr_llm.mcp.oauth.OAuthLegs``):
    probe, start, the browser's round trip (``browser``: e.g. a session reaching test names),
    finish. Returns the grant and the authorization URL the browser was sent to."""
    from nr_llm.mcp.oauth import SystemWallClock, finish_authorization, probe_challenge, start_authorization

    wall = SystemWallClock()
    challenge = probe_challenge(legs, peers.mcp.url)
    assert challenge is not None
    started = start_authorization(
        legs,
        peers.mcp.url,
        config,
        store,
        wall,
        resource_metadata=challenge.resource_metadata,
        challenged_scopes=challenge.scopes,
    )
    location = peers.auth.approve(started.url, session=browser)
    callback = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    grant = finish_authorization(
        legs,
        started.pending,
        config,
        wall,
        code=callback.get("code"),
        state=callback.get("state"),
        iss=callback.get("iss"),
    )
    return grant, started.url


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge (RFC 7636), for tests that drive the flow by hand."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@contextlib.contextmanager
def start_oauth_peers(
    *,
    access_token_seconds: int = 300,
    redirect_uris: tuple[str, ...] = DEFAULT_REDIRECT_URIS,
    tls: TestAuthority | None = None,
) -> Iterator[OAuthPeers]:
    """Start both peers side by side, wait for both, stop both afterwards (``tls``: by name, over https)."""
    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="oauth-peer-")))
        seed = _seed(redirect_uris)
        (directory / "seed.json").write_text(json.dumps(seed))
        # The authorization server's socket is bound here and handed down, so its issuer URL
        # is known before it starts and the MCP server (which needs it) starts at the same time.
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        auth_host, mcp_host = ("auth.test", "mcp.test") if tls else ("127.0.0.1", "127.0.0.1")
        scheme = "https" if tls else "http"
        issuer = f"{scheme}://{auth_host}:{listener.getsockname()[1]}"
        auth = _authorization_server(issuer, seed, access_token_seconds, directory)
        resource = auth.resource_server_client
        assert resource.client_secret is not None
        auth_tls: list[str] = []
        mcp_tls: list[str] = []
        if tls:
            auth_files, mcp_files = tls.issue(auth_host), tls.issue(mcp_host)
            auth_tls = ["--certfile", str(auth_files.certfile), "--keyfile", str(auth_files.keyfile)]
            auth_tls += ["--public-host", auth_host]
            mcp_tls = ["--certfile", str(mcp_files.certfile), "--keyfile", str(mcp_files.keyfile)]
            mcp_tls += ["--public-host", mcp_host, "--introspection-ca", str(tls.bundle)]
            mcp_tls += ["--introspection-address", NAMES[auth_host][-1]]
        auth_process = stack.enter_context(
            spawned(
                [
                    sys.executable,
                    "-m",
                    "tests.peers.oauth_server",
                    "--dir",
                    str(directory),
                    "--fd",
                    str(listener.fileno()),
                    "--access-token-seconds",
                    str(access_token_seconds),
                    *auth_tls,
                ],
                pass_fds=[listener.fileno()],
            )
        )
        mcp_process = stack.enter_context(
            spawned(
                [
                    sys.executable,
                    "-m",
                    "tests.peers.oauth_mcp_server",
                    "--issuer",
                    issuer,
                    "--introspection-url",
                    auth.introspection_endpoint,
                    "--client-id",
                    resource.client_id,
                    *mcp_tls,
                ],
                env={"OAUTH_MCP_INTROSPECTION_SECRET": resource.client_secret},
            )
        )
        announced_port(auth_process, STARTUP_SECONDS)
        mcp_port = announced_port(mcp_process, STARTUP_SECONDS)
        mcp = ProtectedMcpServer(
            url=f"{scheme}://{mcp_host}:{mcp_port}/mcp",
            resource_metadata_url=f"{scheme}://{mcp_host}:{mcp_port}/.well-known/oauth-protected-resource/mcp",
            required_scope="mcp:tools",
            admin_scope="mcp:admin",
        )
        yield OAuthPeers(auth=auth, mcp=mcp)


@pytest.fixture(scope="session")
def oauth_peers() -> Iterator[OAuthPeers]:
    """The session's authorization server and protected MCP server (access tokens live 300 s)."""
    with start_oauth_peers() as peers:
        yield peers


def _seed(redirect_uris: tuple[str, ...]) -> dict[str, Any]:
    def client(name: str, grant_type: str, *, confidential: bool) -> dict[str, Any]:
        return {
            "name": name,
            "client_id": f"{name}-{secrets.token_hex(4)}",
            "client_secret": secrets.token_urlsafe(32) if confidential else None,
            "grant_type": grant_type,
            "redirect_uris": list(redirect_uris) if grant_type == "authorization_code" else [],
        }

    return {
        "user": {"username": "operator", "password": secrets.token_urlsafe(16)},
        "other_users": [{"username": "member", "password": secrets.token_urlsafe(16)}],
        "clients": [
            client("mcp-public", "authorization_code", confidential=False),
            client("mcp-confidential", "authorization_code", confidential=True),
            client("mcp-machine", "client_credentials", confidential=True),
            client("mcp-resource-server", "client_credentials", confidential=True),
        ],
    }


def _authorization_server(
    issuer: str, seed: dict[str, Any], access_token_seconds: int, directory: Path
) -> AuthorizationServer:
    clients = {
        entry["name"]: OAuthClient(
            client_id=entry["client_id"],
            client_secret=entry["client_secret"],
            grant_type=entry["grant_type"],
            redirect_uris=tuple(entry["redirect_uris"]),
        )
        for entry in seed["clients"]
    }
    return AuthorizationServer(
        issuer=issuer,
        username=seed["user"]["username"],
        password=seed["user"]["password"],
        public_client=clients["mcp-public"],
        confidential_client=clients["mcp-confidential"],
        machine_client=clients["mcp-machine"],
        resource_server_client=clients["mcp-resource-server"],
        access_token_seconds=access_token_seconds,
        directory=directory,
        other_users={other["username"]: other["password"] for other in seed.get("other_users", [])},
    )


class _Forms(HTMLParser):
    """The forms of a page: action, method, and every input's name and value."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "form":
            self.forms.append({"id": values.get("id"), "action": values.get("action") or "", "inputs": []})
        elif tag == "input" and self.forms:
            self.forms[-1]["inputs"].append(values)


def page_form(html: str, form_id: str) -> dict[str, Any]:
    parser = _Forms()
    parser.feed(html)
    for form in parser.forms:
        if form["id"] == form_id:
            return form
    raise AssertionError(f"no form #{form_id} on the page: {html[:2000]}")


def form_fields(form: dict[str, Any]) -> dict[str, str]:
    # Hidden and text fields as the page filled them; submit buttons are added by the caller.
    return {
        str(field["name"]): str(field.get("value") or "")
        for field in form["inputs"]
        if field.get("name") and field.get("type") != "submit"
    }


def sign_in_and_consent(
    browser: requests.Session,
    authorization_url: str,
    login_url: str,
    username: str,
    password: str,
    *,
    allow: bool = True,
) -> str:
    """The user's part at the authorization-server peer: sign in at ``login_url`` when asked, then
    answer the consent page; returns the Location it redirects to, without following it.

    Apart from ``AuthorizationServer.approve`` for a peer the tests did not start (make demo's).
    """
    # No redirect is followed blindly: the last one goes to the client's redirect URI, where
    # nothing may listen, and its Location is what the caller wants.
    page = browser.get(authorization_url, allow_redirects=False, timeout=REQUEST_SECONDS)
    if page.is_redirect and urljoin(page.url, page.headers["Location"]).startswith(login_url):
        login_page = browser.get(urljoin(page.url, page.headers["Location"]), timeout=REQUEST_SECONDS)
        login = page_form(login_page.text, "loginForm")
        data = {**form_fields(login), "username": username, "password": password}
        signed_in = browser.post(
            urljoin(login_page.url, login["action"]),
            data=data,
            headers={"Referer": login_page.url},
            allow_redirects=False,
            timeout=REQUEST_SECONDS,
        )
        if not signed_in.is_redirect:
            raise AssertionError(f"login refused (HTTP {signed_in.status_code})")
        next_url = urljoin(signed_in.url, signed_in.headers["Location"])
        page = browser.get(next_url, allow_redirects=False, timeout=REQUEST_SECONDS)
    if page.is_redirect:
        # The server answered the client at once: an error, or a grant that needed no consent.
        return str(page.headers["Location"])
    if page.status_code != 200 or "authorizationForm" not in page.text:
        raise AssertionError(f"no consent page (HTTP {page.status_code}): {page.text[:2000]}")
    consent = page_form(page.text, "authorizationForm")
    data = form_fields(consent)
    if allow:
        data["allow"] = "Authorize"
    answer = browser.post(
        page.url, data=data, headers={"Referer": page.url}, allow_redirects=False, timeout=REQUEST_SECONDS
    )
    if answer.status_code != 302:
        raise AssertionError(f"the consent was not answered with a redirect (HTTP {answer.status_code})")
    return str(answer.headers["Location"])


def mcp_request(
    url: str, method: str, params: dict[str, Any] | None = None, *, token: str | None = None
) -> requests.Response:
    """One raw JSON-RPC POST to the (stateless) protected MCP server, as any HTTP client would."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return requests.post(url, json=message, headers=headers, timeout=REQUEST_SECONDS, allow_redirects=False)
