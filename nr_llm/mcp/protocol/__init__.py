"""The MCP protocol: the client, its conversations in both eras, the resend rule, JSON-RPC,
the per-request headers, schema, content and results.

The rule: this package imports ``nr_llm.mcp.wire`` (its legs and vocabulary), and the OAuth
package only through its public face (``from ..oauth import ...``, never ``..oauth.<module>``):
the one seam is the token source (``OperationTokens``) and the challenge parser. Nothing
from Django.
"""
