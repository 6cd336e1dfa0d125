"""Every gunicorn this repository starts has no control socket (project/gunicorn_conf.py).

Since gunicorn 25.1 a master listens by default on one path per user (``~/.gunicorn/gunicorn.ctl``
or under ``$XDG_RUNTIME_DIR``): the demo's site and authorization server, the test peers and a
site's own gunicorn would all claim it. The demo's two are checked in test_demo_signals.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
from gunicorn.config import Config

from tests.oauth_peers import start_oauth_peers
from tests.observability.harness import get, serve
from tests.peers.oauth_server import shared_settings

pytestmark = pytest.mark.e2e


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own for the peers this test starts (they inherit the environment)."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder


def test_the_observability_peers_gunicorn_leaves_no_control_socket(home: Path, tmp_path: Path) -> None:
    """The request-completion peers (and the benchmark, on the same settings) answer and leave
    nothing in the home folder."""
    with serve("gunicorn-sync", tmp_path) as server:
        assert get(server, "/demo/slow/?seconds=0", "gunicorn-conf").startswith(b"HTTP/1.1 200")
        assert list(home.iterdir()) == []


def test_the_authorization_servers_gunicorn_leaves_no_control_socket(home: Path) -> None:
    """The OAuth peer (the demo's authorization server) answers and leaves nothing in the home folder."""
    with start_oauth_peers() as peers:
        assert requests.get(peers.auth.metadata_url, timeout=10).status_code == 200
        assert list(home.iterdir()) == []


def test_a_gunicorn_without_the_setting_skips_it() -> None:
    """The installed gunicorn gets control_socket_disable; one older than 25.1, which has no such
    setting (pyproject allows gunicorn 22), gets the rest and would not fail on it."""
    known = Config().settings
    assert shared_settings(known)["control_socket_disable"] is True
    older = {name for name in known if not name.startswith("control_socket")}
    assert "control_socket_disable" not in shared_settings(older)
    assert shared_settings(older)["loglevel"] == "warning"
