"""The tool API a site's agent loop uses.

- ``register`` a local tool; ``definitions(format, data_class_ceiling=...)`` offers the
  local tools and the enabled remote ones a caller's model may see;
- ``execute(name, arguments, actor=..., data_class_ceiling=...)`` runs one and returns a
  ``ToolResult`` whose ``status`` the loop branches on (``awaiting_approval`` when the
  server requires an operator's approval first);
- ``tool_messages(format, [(call_id, result), ...])`` turns a turn's results into the messages
  the provider takes for the model's next turn (OpenAI Chat Completions or Responses, Anthropic);
- ``approve`` / ``deny`` record an operator's decision, ``resume(call_id)`` runs an approved
  call exactly once;
- ``execute_many(calls, ...)`` runs a model turn's calls side by side and returns their
  results in order;
- ``aexecute``, ``aresume``, ``adefinitions``, ``aexecute_many``: the async twins (Django's
  convention); the sync functions called from a running event loop raise
  ``SynchronousOnlyOperation`` naming them.

- ``enqueue(name, arguments, ...)`` queues a call for a worker of the site's Django Tasks backend
  and returns at once (``queued``); ``result(call_id)`` reads its state; ``aenqueue``/``aresult``;

None of them raises for a tool's failure: the model is told the call failed and the loop
carries on (seed 000). Every ``execute`` leaves a row in the tool-call ledger
(``nr_llm.governance``).
"""

from ..governance.decisions import Decision, DecisionRefused, approve, deny
from .execution import ToolCaller, execute, resume
from .messages import MessageFormat, tool_messages
from .offering import Format, ToolSpec, available, definitions, spec
from .queue import aenqueue, aresult, enqueue, result
from .registry import LocalTool, ToolFunction, local_tool_names, register, unregister
from .results import ToolResult, ToolStatus
from .turn import aexecute_many, execute_many
from .turn_calls import TurnCall
from .twins import adefinitions, aexecute, aresume

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
    "TurnCall",
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
]
