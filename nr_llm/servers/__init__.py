"""MCP servers on the Django side, configured as code.

- ``readiness``: what keeps a saved server from use (no data class, disabled), for the admin
  and the command alike;
- ``configuration``: create or update servers from a mapping or a JSON/TOML file, idempotent,
  credentials only from environment variables (``manage.py mcp_server``).
"""
