"""The tool API a site's agent loop uses.

- ``register`` a local tool; ``definitions(format, data_class_ceiling=...)`` offers the
  local tools and the enabled remote ones a caller's model may see;
- ``execute(name, arguments, actor=..., data_class_ceiling=...)`` runs one and returns a
  ``ToolResult`` whose ``status`` the loop branches on (``awaiting_approval`` when the
  server requires an operator's approval first);
- ``tool_messages(format, [(call_id, result), ...])`` turns a turn's results into the messages
  the provider takes for the model's next turn (OpenAI Chat Completions or Responses, Anthropic);
- ``approve`` / ``deny`` record an operator's decision, ``resume(call_id)`` runs an approved
  call exactly once.

None of them raises for a tool's failure: the model is told the call failed and the loop
carries on (seed 000). Every ``execute`` leaves a row in the tool-call ledger
(``nr_llm.governance``).
"""

from ..governance.decisions import Decision, DecisionRefused, approve, deny
from .execution import ToolCaller, execute, resume
from .messages import MessageFormat, tool_messages
from .offering import Format, ToolSpec, available, definitions, spec
from .registry import LocalTool, ToolFunction, local_tool_names, register, unregister
from .results import ToolResult, ToolStatus

__all__ = [
    "Decision",
    "DecisionRefused",
    "Format",
    "LocalTool",
    "MessageFormat",
    "ToolCaller",
    "ToolFunction",
    "ToolResult",
    "ToolSpec",
    "ToolStatus",
    "approve",
    "available",
    "definitions",
    "deny",
    "execute",
    "local_tool_names",
    "register",
    "resume",
    "spec",
    "tool_messages",
    "unregister",
]
