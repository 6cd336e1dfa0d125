"""A second Django site: django-oauth-toolkit as a real OAuth 2.1 authorization server.

It runs in its own process (``python -m tests.peers.oauth_server``), on its own SQLite file,
and knows nothing of nr_llm. See tests/peers/README.md.
"""

import hashlib


def fingerprint(token: str) -> str:
    """How the request log names a token: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]
