"""Fixtures shared by every test folder (registered here once, so a session fixture starts once)."""

from tests.oauth_peers import oauth_peers

__all__ = ["oauth_peers"]
