"""nr-llm: remote MCP tool servers for Django, bounded and observed."""

#: The only place the version is written: pyproject.toml reads it for the wheel.
__version__ = "0.1.0"
