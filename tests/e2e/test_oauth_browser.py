"""The authorization server's login and consent pages in real Chromium (Debian's, via Playwright).

The browser follows the authorization request, signs in, consents; the server then
redirects it to the client's redirect URI. Nothing listens there: the test catches that
navigation, reads the code, and exchanges it with plain ``requests``. All on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests

from tests.e2e.chromium import chromium_page
from tests.oauth_peers import REQUEST_SECONDS, pkce_pair
from tests.peers import ROOT

pytestmark = pytest.mark.e2e

ARTIFACTS = ROOT / "test-artifacts"
REDIRECT_URI = "http://127.0.0.1:9/callback"


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[object]:
    with chromium_page(tmp_path / "chromium-profile", width=1000, height=700) as page:
        yield page


def test_a_person_signs_in_and_consents_in_chromium(oauth_peers, browser_page):
    """Login form, consent form listing the scopes, redirect with code, state and iss; the code works."""
    auth, client = oauth_peers.auth, oauth_peers.auth.public_client
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser_page
    verifier, challenge = pkce_pair()
    redirects: list[str] = []

    def catch_callback(route):
        # The client's redirect URI: record it and answer in place of the absent client.
        redirects.append(route.request.url)
        route.fulfill(status=200, content_type="text/plain", body="callback reached")

    page.route("http://127.0.0.1:9/**", catch_callback)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": REDIRECT_URI,
            "scope": "mcp:tools mcp:admin",
            "state": "browser-state",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": oauth_peers.mcp.url,
        }
    )
    page.goto(f"{auth.authorization_endpoint}?{query}")

    page.wait_for_selector("#loginForm")
    assert page.url.startswith(auth.login_url)
    page.fill("#id_username", auth.username)
    page.fill("#id_password", auth.password)
    page.get_by_role("button", name="Sign in").click()

    page.wait_for_selector("#authorizationForm")
    consent = page.locator("#authorizationForm").inner_text()
    assert "Call the MCP server's tools" in consent
    assert "Call the MCP server's administrative tools" in consent
    page.screenshot(path=str(ARTIFACTS / "oauth-peer-consent.png"), full_page=True)
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url("http://127.0.0.1:9/callback?**")

    assert len(redirects) == 1
    callback = parse_qs(urlsplit(redirects[0]).query)
    assert callback["state"] == ["browser-state"]
    assert callback["iss"] == [auth.issuer]
    answer = requests.post(
        auth.token_endpoint,
        data={
            "grant_type": "authorization_code",
            "code": callback["code"][0],
            "redirect_uri": REDIRECT_URI,
            "client_id": client.client_id,
            "code_verifier": verifier,
            "resource": oauth_peers.mcp.url,
        },
        timeout=REQUEST_SECONDS,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["scope"].split() == ["mcp:tools", "mcp:admin"]
