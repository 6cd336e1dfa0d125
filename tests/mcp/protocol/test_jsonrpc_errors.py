"""How a server's JSON-RPC error reads in the error the caller gets."""

from __future__ import annotations

from nr_llm.mcp.protocol.jsonrpc import error_of


def test_an_error_ends_its_sentence_so_what_follows_reads_as_a_new_one() -> None:
    """The full stop after "(code -32603)": the client appends "The tool … may have run" to
    a tools/call's error, and without the stop the two ran together."""
    error = error_of({"code": -32603, "message": "Internal error"}, "docs")
    assert str(error) == "MCP server 'docs' answered with an error: Internal error (code -32603)."
    assert error.code == -32603
