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

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import ClientConfig, DpopKey, Grant, MemoryGrantStore, OAuthSettings
from nr_llm.mcp.oauth.store import ClientRegistration
from nr_llm.mcp.protocol.listen import Window, listen
from tests.peers import running

pytestmark = pytest.mark.e2e

TOKEN = "bound-listen-0"


def _dpop_server(*args: str) -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.changing_server", "--dpop", TOKEN, *args]) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def dpop_server() -> Iterator[str]:
    yield from _dpop_server()


@pytest.fixture
def modern_dpop_server() -> Iterator[str]:
    yield from _dpop_server("--modern")


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


def _window_with_a_change(base: str) -> tuple[Window, int]:
    """Hold the change stream for 4 s while the server announces one change once it is open;
    the window and the changes heard."""
    heard: list[int] = []

    def announce_once_the_stream_is_open() -> None:
        until = time.monotonic() + 8
        while time.monotonic() < until and _seen(base)["streams"] < 1:
            time.sleep(0.05)
        requests.post(f"{base}/add/fresh", timeout=5)

    announcer = threading.Thread(target=announce_once_the_stream_is_open)
    announcer.start()
    try:
        window = listen(
            McpClient(connection=ConnectionSettings(allow_private_networks=True)),
            _endpoint(f"{base}/mcp"),
            lambda: heard.append(1),
            window_seconds=4,
        )
    finally:
        announcer.join()
    return window, len(heard)


def test_the_listen_stream_carries_a_fresh_proof_and_honours_its_nonce(dpop_server: str) -> None:
    """The GET stream opens with the DPoP scheme and a proof the server accepts (none refused as
    bad), after one nonce refusal of its own; the change announced on it is heard."""
    window, heard = _window_with_a_change(dpop_server)
    seen = _seen(dpop_server)
    assert window.era == "handshake" and window.changes >= 1 and heard
    assert seen["streams"] == 1 and seen["seen"]["GET"] == 1
    assert seen["dpop"]["bad_proofs"] == 0, seen
    assert seen["dpop"]["nonce_refusals"]["GET"] == 1, seen


def test_a_2026_listen_request_carries_a_fresh_proof(modern_dpop_server: str) -> None:
    """The 2026-07-28 ``subscriptions/listen`` POST holds the stream: its proof (with the nonce the
    server handed out on the first POST) is accepted, and the change is heard on it."""
    window, heard = _window_with_a_change(modern_dpop_server)
    seen = _seen(modern_dpop_server)
    assert window.era == "modern" and heard
    assert seen["streams"] == 1 and seen["dpop"]["bad_proofs"] == 0, seen
    assert seen["dpop"]["nonce_refusals"] == {"POST": 1}, seen
