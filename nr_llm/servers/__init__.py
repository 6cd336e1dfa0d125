"""MCP servers on the Django side: credentials, the client, health, configuration as code."""
