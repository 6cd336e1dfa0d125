"""Each package keeps its own admin module; the app config registers them all."""

import importlib.util

from django.contrib import admin

from nr_llm.governance.models import ToolCall, ToolCallApproval
from nr_llm.models import McpFeature, McpServer, McpTool, UserGrantRecord


def test_every_package_admin_is_registered_without_a_top_level_admin_module() -> None:
    """Django autodiscovers only ``nr_llm.admin``, which no longer exists: the servers', the
    catalogue's, the ledger's and the per-user grants' admins register from ``ready()``."""
    assert importlib.util.find_spec("nr_llm.admin") is None
    models = [McpServer, McpTool, McpFeature, ToolCall, ToolCallApproval, UserGrantRecord]
    assert [model.__name__ for model in models if not admin.site.is_registered(model)] == []
