"""The official MCP conformance suite run against our client (see README.md)."""
