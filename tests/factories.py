"""factory-boy factories for rows."""

from __future__ import annotations

from factory.declarations import LazyAttribute, LazyFunction, Sequence, SubFactory
from factory.django import DjangoModelFactory

from nr_llm.models import DataClass, McpServer, McpTool


class McpServerFactory(DjangoModelFactory[McpServer]):
    class Meta:
        model = McpServer

    identifier = Sequence(lambda n: f"server{n}")
    name = Sequence(lambda n: f"Server {n}")
    url = "http://127.0.0.1:9/mcp"
    data_class = DataClass.PUBLIC_CONTENT
    enabled = True
    # The model's default is True; tests of the approval step ask for it by name.
    requires_approval = False


class McpToolFactory(DjangoModelFactory[McpTool]):
    class Meta:
        model = McpTool

    server = SubFactory(McpServerFactory)
    remote_name = Sequence(lambda n: f"tool{n}")
    tool_name = LazyAttribute(lambda o: f"mcp_{o.server.identifier}_{o.remote_name}")
    description = "A test tool."
    input_schema = LazyFunction(lambda: {"type": "object", "properties": {}})
