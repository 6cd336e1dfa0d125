"""nr-llm: remote MCP tool servers for Django, bounded and observed."""

#: The one place the version is written: the wheel's metadata reads it (pyproject.toml), and
#: CHANGELOG.md has a section for it.
__version__ = "0.1.0"
