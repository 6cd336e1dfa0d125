"""The authorization-server peer behaves as django-oauth-toolkit does for a real client.

Plain ``requests`` only (no nr_llm code): these tests prove the peer that the OAuth client
tests rely on — metadata, authorization code + PKCE, refresh rotation, client credentials,
registration, introspection, revocation — all on 127.0.0.1.
"""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.oauth_peers import REQUEST_SECONDS, OAuthPeers, fingerprint, pkce_pair

pytestmark = pytest.mark.e2e

REDIRECT_URI = "http://127.0.0.1:9/callback"


def _authorize_url(peers: OAuthPeers, client_id: str, *, drop: tuple[str, ...] = (), **overrides: str) -> str:
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT_URI,
        "scope": "mcp:tools",
        "state": "state-123",
        "code_challenge": pkce_pair()[1],
        "code_challenge_method": "S256",
        "resource": peers.mcp.url,
        **overrides,
    }
    return (
        f"{peers.auth.authorization_endpoint}?{urlencode({k: v for k, v in query.items() if k not in drop})}"
    )


def _token(peers: OAuthPeers, data: dict[str, str], auth: tuple[str, str] | None = None) -> requests.Response:
    return requests.post(peers.auth.token_endpoint, data=data, auth=auth, timeout=REQUEST_SECONDS)


def _introspect(peers: OAuthPeers, token: str) -> dict[str, object]:
    client = peers.auth.resource_server_client
    assert client.client_secret is not None
    answer = requests.post(
        peers.auth.introspection_endpoint,
        data={"token": token},
        auth=(client.client_id, client.client_secret),
        timeout=REQUEST_SECONDS,
    )
    assert answer.status_code == 200
    result: dict[str, object] = answer.json()
    return result


def test_metadata_is_rfc_8414_at_the_origin(oauth_peers):
    """The RFC 8414 document names its own URL as issuer, S256 only, and every endpoint a client needs."""
    auth = oauth_peers.auth
    answer = requests.get(auth.metadata_url, timeout=REQUEST_SECONDS)
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "application/json"
    metadata = answer.json()
    assert metadata["issuer"] == auth.issuer
    assert metadata["authorization_endpoint"] == auth.authorization_endpoint
    assert metadata["token_endpoint"] == auth.token_endpoint
    assert metadata["introspection_endpoint"] == auth.introspection_endpoint
    assert metadata["revocation_endpoint"] == auth.revocation_endpoint
    assert metadata["registration_endpoint"] == auth.registration_endpoint
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert set(metadata["grant_types_supported"]) == {
        "authorization_code",
        "client_credentials",
        "refresh_token",
    }
    assert set(metadata["token_endpoint_auth_methods_supported"]) == {
        "client_secret_basic",
        "client_secret_post",
    }
    assert {"mcp:tools", "mcp:admin", "offline_access"} <= set(metadata["scopes_supported"])
    assert metadata["authorization_response_iss_parameter_supported"] is True


def test_authorization_code_with_pkce_issues_tokens_bound_to_the_mcp_server(oauth_peers):
    """Log in, consent, catch the redirect (code, state, RFC 9207 iss), exchange with the verifier."""
    auth, client = oauth_peers.auth, oauth_peers.auth.public_client
    verifier, challenge = pkce_pair()
    before = auth.token_requests("authorization_code")

    location = auth.approve(_authorize_url(oauth_peers, client.client_id, code_challenge=challenge))

    callback = urlsplit(location)
    assert f"{callback.scheme}://{callback.netloc}{callback.path}" == REDIRECT_URI
    query = parse_qs(callback.query)
    assert query["state"] == ["state-123"]
    assert query["iss"] == [auth.issuer]
    data = {
        "grant_type": "authorization_code",
        "code": query["code"][0],
        "redirect_uri": REDIRECT_URI,
        "client_id": client.client_id,
        "code_verifier": verifier,
        "resource": oauth_peers.mcp.url,
    }
    answer = _token(oauth_peers, data)
    assert answer.status_code == 200, answer.text
    tokens = answer.json()
    assert tokens["token_type"] == "Bearer"
    assert tokens["expires_in"] == auth.access_token_seconds
    assert tokens["scope"] == "mcp:tools"
    assert tokens["refresh_token"]
    introspection = _introspect(oauth_peers, tokens["access_token"])
    assert introspection["active"] is True
    assert introspection["aud"] == [oauth_peers.mcp.url]
    assert introspection["username"] == auth.username
    assert auth.token_requests("authorization_code") == before + 1
    # A code is single use: the same exchange again is refused.
    again = _token(oauth_peers, data)
    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"


def test_pkce_is_required_and_checked(oauth_peers):
    """No challenge or the plain method: refused at /authorize/; a wrong verifier: refused at /token/."""
    auth, client = oauth_peers.auth, oauth_peers.auth.public_client
    no_challenge = _authorize_url(
        oauth_peers, client.client_id, drop=("code_challenge", "code_challenge_method")
    )
    plain = _authorize_url(
        oauth_peers, client.client_id, code_challenge="a" * 43, code_challenge_method="plain"
    )
    for url in (no_challenge, plain):
        query = parse_qs(urlsplit(auth.approve(url)).query)
        assert query["error"] == ["invalid_request"], url
        assert "code" not in query

    location = auth.approve(_authorize_url(oauth_peers, client.client_id))
    code = parse_qs(urlsplit(location).query)["code"][0]
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT_URI,
        "client_id": client.client_id,
        "code_verifier": pkce_pair()[0],  # not the one whose challenge was sent
    }
    answer = _token(oauth_peers, data)
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"


def test_denied_consent_redirects_with_access_denied(oauth_peers):
    """Cancel on the consent page: the client gets error=access_denied and its state back, no code."""
    auth = oauth_peers.auth
    location = auth.approve(_authorize_url(oauth_peers, auth.public_client.client_id), allow=False)
    query = parse_qs(urlsplit(location).query)
    assert query["error"] == ["access_denied"]
    assert query["state"] == ["state-123"]
    assert "code" not in query


def test_refresh_rotates_and_a_used_refresh_token_is_refused(oauth_peers):
    """Each refresh gives a new refresh token; presenting a used one fails and revokes the family."""
    auth, client = oauth_peers.auth, oauth_peers.auth.confidential_client
    assert client.client_secret is not None
    credentials = (client.client_id, client.client_secret)
    first = auth.authorization_code_tokens(client, resource=oauth_peers.mcp.url)
    before = auth.token_requests("refresh_token")

    answer = _token(
        oauth_peers, {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}, credentials
    )
    assert answer.status_code == 200, answer.text
    second = answer.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert _introspect(oauth_peers, second["access_token"])["aud"] == [oauth_peers.mcp.url]

    reused = _token(
        oauth_peers, {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}, credentials
    )
    assert reused.status_code == 400
    assert reused.json()["error"] == "invalid_grant"
    # Reuse protection (RFC 9700 §4.14.2): the rotated token of that family is dead too.
    after_reuse = _token(
        oauth_peers, {"grant_type": "refresh_token", "refresh_token": second["refresh_token"]}, credentials
    )
    assert after_reuse.status_code == 400

    seen = auth.requests_seen("token", "refresh_token")[before:]
    assert [(entry["status"], entry["refresh_token_fingerprint"]) for entry in seen] == [
        (200, fingerprint(first["refresh_token"])),
        (400, fingerprint(first["refresh_token"])),
        (400, fingerprint(second["refresh_token"])),
    ]


def test_client_credentials_with_basic_and_post_authentication(oauth_peers):
    """Client credentials by client_secret_basic or client_secret_post; a wrong secret: invalid_client."""
    client = oauth_peers.auth.machine_client
    assert client.client_secret is not None
    grant = {"grant_type": "client_credentials", "scope": "mcp:tools", "resource": oauth_peers.mcp.url}

    basic = _token(oauth_peers, grant, (client.client_id, client.client_secret))
    post = _token(
        oauth_peers, {**grant, "client_id": client.client_id, "client_secret": client.client_secret}
    )
    wrong = _token(oauth_peers, grant, (client.client_id, "not-the-secret"))

    for answer in (basic, post):
        assert answer.status_code == 200, answer.text
        assert "refresh_token" not in answer.json()
        assert _introspect(oauth_peers, answer.json()["access_token"])["client_id"] == client.client_id
    assert wrong.status_code == 401
    assert wrong.json()["error"] == "invalid_client"


def test_dynamic_registration_creates_a_working_client(oauth_peers):
    """RFC 7591: an anonymous registration returns a client id (and secret) that completes a grant."""
    auth = oauth_peers.auth
    before = len(auth.requests_seen("register"))
    confidential = auth.register_client(["http://127.0.0.1/registered/callback"])
    public = auth.register_client(["http://localhost/registered/callback"], confidential=False)

    assert confidential.client_secret
    assert public.client_secret is None
    assert len(auth.requests_seen("register")) == before + 2
    for client, callback in (
        (confidential, "http://127.0.0.1:8/registered/callback"),
        (public, "http://localhost:8/registered/callback"),
    ):
        tokens = auth.authorization_code_tokens(client, resource=oauth_peers.mcp.url, redirect_uri=callback)
        assert tokens["refresh_token"]


def test_a_redirect_uri_never_registered_gets_no_redirect(oauth_peers):
    """A different path is not the client's: the server shows an error page and sends no code anywhere."""
    auth = oauth_peers.auth
    query = urlencode(
        {
            "response_type": "code",
            "client_id": auth.public_client.client_id,
            "redirect_uri": "http://127.0.0.1:9/elsewhere",
            "code_challenge": pkce_pair()[1],
            "code_challenge_method": "S256",
        }
    )
    with pytest.raises(AssertionError, match="no consent page"):
        auth.approve(f"{auth.authorization_endpoint}?{query}")


def test_revoked_access_token_is_inactive(oauth_peers):
    """RFC 7009 revocation by the client that holds the token; introspection then says inactive."""
    auth, client = oauth_peers.auth, oauth_peers.auth.confidential_client
    assert client.client_secret is not None
    tokens = auth.authorization_code_tokens(client, resource=oauth_peers.mcp.url)
    assert _introspect(oauth_peers, tokens["access_token"])["active"] is True

    answer = requests.post(
        auth.revocation_endpoint,
        data={"token": tokens["access_token"], "token_type_hint": "access_token"},
        auth=(client.client_id, client.client_secret),
        timeout=REQUEST_SECONDS,
    )
    assert answer.status_code == 200
    assert _introspect(oauth_peers, tokens["access_token"]) == {"active": False}


def test_simultaneous_refreshes_of_one_token_never_fork_the_grant(oauth_peers):
    """Two requests presenting one refresh token at once: both reach the server, and at most one
    new refresh token results (the toolkit answers a concurrent duplicate with the same pair, or
    refuses it). A client's double refresh shows in the request count, not always as a failure."""
    auth, client = oauth_peers.auth, oauth_peers.auth.confidential_client
    assert client.client_secret is not None
    credentials = (client.client_id, client.client_secret)
    tokens = auth.authorization_code_tokens(client, resource=oauth_peers.mcp.url)
    before = auth.token_requests("refresh_token")
    barrier = threading.Barrier(2, timeout=REQUEST_SECONDS)
    answers: list[requests.Response] = []

    def refresh() -> None:
        barrier.wait()
        data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        answers.append(_token(oauth_peers, data, credentials))

    threads = [threading.Thread(target=refresh) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=2 * REQUEST_SECONDS)

    assert len(answers) == 2
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses in ([200, 200], [200, 400]), statuses
    issued = {answer.json()["refresh_token"] for answer in answers if answer.status_code == 200}
    assert len(issued) == 1
    assert tokens["refresh_token"] not in issued
    assert auth.token_requests("refresh_token") == before + 2


def test_signing_in_sets_no_cookie_a_django_site_on_127_0_0_1_uses(oauth_peers):
    """Cookies ignore the port: the peer's session and CSRF cookies have names of their own, so
    signing in there never replaces the admin's ``sessionid`` or ``csrftoken`` in the browser."""
    auth = oauth_peers.auth
    with requests.Session() as browser:
        location = auth.approve(_authorize_url(oauth_peers, auth.public_client.client_id), session=browser)
        names = {cookie.name for cookie in browser.cookies}

    assert "code" in parse_qs(urlsplit(location).query)
    assert {"oauth_peer_sessionid", "oauth_peer_csrftoken"} <= names
    assert not names & {"sessionid", "csrftoken"}
