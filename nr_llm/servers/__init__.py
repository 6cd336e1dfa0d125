"""MCP servers on the Django side: their credentials, their client, their health, configured
as code.

- ``credentials``: secrets at rest (encrypted) and from the environment; ``credential_rotation``
  re-encrypts them under a new key (``manage.py mcp_rotate_credentials``);
- ``endpoints``: a server row as the protocol client's ``Endpoint``, and the app's client
  (``mcp_client``, with ``conf.MCP_CONNECTION``);
- ``connection``: the connection test (the admin's action); ``health``: liveness recorded on
  every successful operation;
- ``readiness``: what keeps a saved server from use (no data class, disabled), for the admin
  and the command alike;
- ``configuration``: create or update servers from a mapping or a JSON/TOML file, idempotent,
  credentials only from environment variables (``manage.py mcp_server``).
"""
