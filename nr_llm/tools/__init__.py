"""The tool API a site's agent loop uses (docs/tool-api.md).

None of it raises for a tool's failure: the model is told the call failed and the loop carries
on. Every ``execute`` leaves a row in the tool-call ledger.
"""

from ..governance.decisions import Decision, DecisionRefused, approve, deny
from ..providers import Provider
from .execution import ToolCaller, execute, resume
from .messages import tool_messages
from .offering import ToolSpec, available, definitions, spec
from .queue import aenqueue, aresult, enqueue, result
from .registry import local_tool_names, register, unregister
from .results import ToolResult, ToolStatus
from .seam import using_client
from .turn import aexecute_many, execute_many
from .twins import adefinitions, aexecute, aresume

__all__ = [
    "Decision",
    "DecisionRefused",
    "Provider",
    "ToolCaller",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "adefinitions",
    "aenqueue",
    "aresult",
    "enqueue",
    "result",
    "aexecute",
    "aexecute_many",
    "approve",
    "aresume",
    "available",
    "definitions",
    "deny",
    "execute",
    "execute_many",
    "local_tool_names",
    "register",
    "resume",
    "spec",
    "tool_messages",
    "unregister",
    "using_client",
]
