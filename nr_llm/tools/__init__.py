"""The tool API a site's agent loop uses.

- ``register`` a local tool; ``definitions(provider, data_class_ceiling=...)`` offers the
  local tools and the enabled remote ones a caller's model may see;
- ``execute(name, arguments, actor=..., data_class_ceiling=...)`` runs one and returns a
  ``ToolResult`` whose ``status`` the loop branches on (``awaiting_approval`` when the
  server requires an operator's approval first);
- ``tool_messages(provider, results)`` turns a turn's results (each carrying the provider's id
  of its call, ``tool_call_id``) into the messages the provider takes for the model's next turn
  (``Provider``: OpenAI Chat Completions or Responses, Anthropic);
- ``approve`` / ``deny`` record an operator's decision, ``resume(call_id)`` runs an approved
  call exactly once (``call_id``: the ledger row's id, ``result.call_id``; the provider's id of
  a call is always ``tool_call_id``);
- ``execute_many(calls, ...)`` runs a model turn's calls side by side and returns their
  results in order;
- ``aexecute``, ``aresume``, ``adefinitions``, ``aexecute_many``: the async twins (Django's
  convention); the sync functions called from a running event loop raise
  ``SynchronousOnlyOperation`` naming them.

- ``enqueue(name, arguments, ...)`` queues a call for a worker of the site's Django Tasks backend
  and returns at once (``queued``); ``result(call_id)`` reads its state; ``aenqueue``/``aresult``;
- ``using_client(fake)``: a site's tests swap the MCP client for a double, and take every other
  step of production (the ledger included).

None of them raises for a tool's failure: the model is told the call failed and the loop
carries on (seed 000). Every ``execute`` leaves a row in the tool-call ledger
(``nr_llm.governance``).
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
