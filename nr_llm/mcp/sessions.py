"""A ``requests`` session made fit for a leg: direct, watched, redirects never touched.

Shared by the MCP transport and the OAuth legs, which both send to hosts judged by the
host gate and must not let ``requests`` undo that judgement.
"""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter

from .watchdog import POOL_CLASSES


class WatchedAdapter(HTTPAdapter):
    """Connections through the watched pool classes: dialled to vetted addresses, cut at the grant."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = POOL_CLASSES


def _no_redirect_target(response: requests.Response) -> None:
    return None


def harden(session: requests.Session) -> requests.Session:
    """Make ``session`` send directly, through watched connections, and leave 3xx unread."""
    # Direct connections only, whatever session the factory made: through a proxy the
    # gate would judge the wrong address and the watchdog would not see the socket (and a
    # .netrc password must not reach anyone).
    session.trust_env = False
    session.proxies.clear()
    # Session.send runs the redirect machinery even with allow_redirects=False (to
    # offer the next request as response.next): it reads the whole 3xx body, inflated
    # and uncapped, and parses Location, raising whatever a hostile one provokes.
    # With no redirect target it does neither; the 3xx comes back unread.
    session.get_redirect_target = _no_redirect_target  # type: ignore[method-assign,assignment]
    adapter = WatchedAdapter(max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
