"""The Django side of MCP authorization (OAuth 2.1): grants kept encrypted, shared by every
worker under a row lock, and the admin's Connect and Disconnect pages."""
