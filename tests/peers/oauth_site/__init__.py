"""A second Django site: django-oauth-toolkit as a real OAuth 2.1 authorization server.

It runs in its own process (``python -m tests.peers.oauth_server``), on its own SQLite file,
and knows nothing of nr_llm. See tests/peers/README.md.
"""
