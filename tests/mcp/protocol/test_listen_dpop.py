"""The standing GET stream of a DPoP-protected server (RFC 9449): the listen request carries the
bound token and a fresh proof made for it, and a nonce the server asks for is honoured there as
on a POST, against a real resource server that checks every proof
(tests/peers/changing_server.py ``--dpop``)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from nr_llm.mcp import Endpoint, McpClient
from nr_llm.mcp.oauth import ClientConfig, DpopKey, Grant, MemoryGrantStore, OAuthSettings
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.protocol.listen import listen
from tests.peers import running

pytestmark = pytest.mark.e2e

TOKEN = "bound-listen-0"


@pytest.fixture
def dpop_server() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server", "--dpop", TOKEN]) as port:
        yield f"http://127.0.0.1:{port}"


def _seen(base: str) -> dict[str, Any]:
    return requests.get(f"{base}/seen", timeout=5).json()  # type: ignore[no-any-return]


def _endpoint(url: str) -> Endpoint:
    store = MemoryGrantStore()
    grant = Grant(
        access_token=TOKEN,
        issuer="http://127.0.0.1:9/",
        token_endpoint="http://127.0.0.1:9/token",
        resource=url,
        client=ClientRegistration("http://127.0.0.1:9/", "cid"),
        token_type="DPoP",
        dpop_key=DpopKey.generate().pem,
        mcp_url=url,
    )
    store.save("watched", grant)
    return Endpoint(
        identifier="watched", url=url, budget_seconds=10, oauth=OAuthSettings(ClientConfig(dpop=True), store)
    )


def test_the_listen_stream_carries_a_fresh_proof_and_honours_its_nonce(dpop_server: str) -> None:
    """The GET stream opens with the DPoP scheme and a proof the server accepts (none refused as
    bad), after one nonce refusal of its own; the change announced on it is heard."""
    heard: list[int] = []

    def announce_once_the_stream_is_open() -> None:
        until = time.monotonic() + 8
        while time.monotonic() < until and _seen(dpop_server)["streams"] < 1:
            time.sleep(0.05)
        requests.post(f"{dpop_server}/add/fresh", timeout=5)

    announcer = threading.Thread(target=announce_once_the_stream_is_open)
    announcer.start()
    window = listen(
        McpClient(allow_private_networks=True),
        _endpoint(f"{dpop_server}/mcp"),
        lambda: heard.append(1),
        window_seconds=4,
    )
    announcer.join()
    seen = _seen(dpop_server)
    assert window.era == "handshake" and window.changes >= 1 and heard
    assert seen["streams"] == 1 and seen["seen"]["GET"] == 1
    assert seen["dpop"]["bad_proofs"] == 0, seen
    assert seen["dpop"]["nonce_refusals"]["GET"] == 1, seen
