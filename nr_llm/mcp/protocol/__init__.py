"""The MCP protocol client in both eras: JSON-RPC, schema, content and results.

It imports ``nr_llm.mcp.wire`` and ``nr_llm.mcp.oauth`` (only its public face), never Django.
"""
