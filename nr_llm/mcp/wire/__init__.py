"""Every HTTP request of the client (MCP or OAuth), and the types all three layers share.

It knows HTTP, not JSON-RPC, and imports nothing from ``protocol``, ``oauth`` or Django.
"""
