"""nr-llm: remote MCP tool servers for Django, bounded and observed."""
