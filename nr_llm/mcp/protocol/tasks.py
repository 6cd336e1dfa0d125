"""Tasks: a ``tools/call`` the server answers with a task handle, polled until the task ends.

Two forms are spoken, one per era:

- the 2026-07-28 era, the ``io.modelcontextprotocol/tasks`` extension (SEP-2663): the client
  declares the extension in the request's own capabilities and the server decides; a task is a
  result with ``resultType: "task"``; ``tasks/get`` carries the final result (or error) inline,
  input the task needs arrives as ``inputRequests`` and is answered with ``tasks/update``;
  ``tasks/cancel`` is an acknowledgement. ``requestState`` is echoed as received.
- the handshake era, the 2025-11-25 core utility: the client asks per request (``params.task``)
  only when the server declared ``tasks.requests.tools.call`` and the tool's listed
  ``execution.taskSupport`` is ``optional`` or ``required``; the answer is ``{"task": ...}``;
  the result is fetched once with ``tasks/result`` after the task ended; input the task needs
  is asked for on the stream of ``tasks/result`` (answered through the responder, as any
  elicitation of the era). The task lives in the session that created it (as in the reference
  server), so a session holding an unfinished task is not ended, and its id is kept in the
  task's state for the poll that resumes it.

Polling honours the server's interval (``pollIntervalMs``; ``pollIntervalMilliseconds`` and
``pollInterval`` of the other drafts) within a floor and a ceiling, and spends the operation's
one budget: a task that has not ended when the budget has no room for another poll is
``task_pending``, with the state needed to resume (``TaskState``, which a caller may store as
JSON). Exactly once: nothing here sends ``tools/call``; every failure after the task was created
says the server accepted the call.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from ..wire.deadline import MINIMUM_LEG_SECONDS, OperationDeadline
from ..wire.errors import ErrorKind, McpTransportError
from ..wire.text import MESSAGE_LIMIT, NAME_LIMIT, clean
from . import jsonrpc, modern

if TYPE_CHECKING:
    from .handshake import HandshakeConversation
    from .modern_conversation import InputResponder, ModernConversation

logger = logging.getLogger("nr_llm.mcp")

EXTENSION = "io.modelcontextprotocol/tasks"
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
STATUSES: frozenset[str] = frozenset(get_args(TaskStatus))
TERMINAL = frozenset({"completed", "failed", "cancelled"})

# The server's interval is a hint: 0 would make the client hammer it, ten days would leave a
# finished task unread for the rest of the budget. Both are clamped to these.
MIN_POLL_MS = 100
MAX_POLL_MS = 30_000
# When the server suggests no interval.
DEFAULT_POLL_MS = 1_000
# A task id or request state longer than this is no handle a row should keep.
TASK_ID_LIMIT = 512
REQUEST_STATE_LIMIT = 65_536
# Rounds of input (2026 era) one poll loop answers before giving up on the server.
MAX_INPUT_ROUNDS = 8
_TASK_SUPPORT = frozenset({"optional", "required"})


@dataclass(frozen=True)
class TaskOptions:
    """How a ``tools/call`` asks for a task, and how its polling behaves.

    ``task_support`` is the tool's listed ``execution.taskSupport``: the 2025-11-25 form asks
    for a task only when it is ``optional`` or ``required`` (the specification forbids asking
    otherwise); the 2026 extension needs no such hint (the server decides). ``ttl_ms`` is the
    lifetime asked for (2025-11-25 only). ``on_state`` hears the task's state when it is created
    and each time it changes, so a caller can keep it (e.g. on a ledger row) and resume polling
    elsewhere; whatever it raises is logged and polling goes on. ``follow_seconds``: once the
    task is created, poll it at most this long within the operation, then end ``task_pending``
    (a worker keeps the whole budget for the call itself, and follows its task in slices).
    """

    task_support: str | None = None
    ttl_ms: int | None = None
    on_state: Callable[[TaskState], None] | None = None
    min_poll_ms: int = MIN_POLL_MS
    max_poll_ms: int = MAX_POLL_MS
    follow_seconds: float | None = None

    def poll_seconds(self, state: TaskState) -> float:
        suggested = DEFAULT_POLL_MS if state.poll_interval_ms is None else state.poll_interval_ms
        floor = max(self.min_poll_ms, 0)
        return min(max(suggested, floor), max(self.max_poll_ms, floor)) / 1000


@dataclass(frozen=True)
class TaskState:
    """A task as last seen: what a caller keeps to resume polling in another process.

    ``era`` names the form ("modern": SEP-2663; "handshake": 2025-11-25); ``session_id`` the
    handshake-era session the task lives in; ``request_state`` the opaque value SEP-2663 has
    echoed. Both are out of ``repr``: a session id and a server's state are no text for a log.
    """

    task_id: str
    status: TaskStatus
    era: Literal["modern", "handshake"]
    status_message: str = ""
    poll_interval_ms: int | None = None
    ttl_ms: int | None = None
    protocol_version: str = ""
    session_id: str | None = field(default=None, repr=False)
    request_state: str | None = field(default=None, repr=False)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def as_dict(self) -> dict[str, Any]:
        """A JSON object to store (``from_dict`` reads it back)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        """A stored state; ``ValueError`` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("a task state is a JSON object")
        task_id, status, era = data.get("task_id"), data.get("status"), data.get("era")
        if (
            not isinstance(task_id, str)
            or not task_id
            or status not in STATUSES
            or era not in ("modern", "handshake")
        ):
            raise ValueError("a task state needs task_id, a known status and era")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


class TaskError(McpTransportError):
    """A failure after the server created a task: ``task`` is its last known state (None only
    when no task was created). Always ``accepted``: the server took the call."""

    def __init__(
        self,
        kind: ErrorKind,
        server: str,
        message: str,
        *,
        task: TaskState | None = None,
        http_status: int | None = None,
        code: int | None = None,
        data: Any = None,
        accepted: bool = True,
        written: bool = True,
    ) -> None:
        super().__init__(
            kind,
            server,
            message,
            http_status=http_status,
            code=code,
            data=data,
            accepted=accepted,
            written=written,
        )
        self.task = task

    def __reduce__(self) -> tuple[Any, ...]:
        extra = {
            "task": self.task,
            "http_status": self.http_status,
            "code": self.code,
            "data": self.data,
            "accepted": self.accepted,
            "written": self.written,
        }
        return (_rebuild, (self.kind, self.server, str(self), extra))


def _rebuild(kind: ErrorKind, server: str, message: str, extra: dict[str, Any]) -> TaskError:
    return TaskError(kind, server, message, **extra)


# -- reading the server's task objects ---------------------------------------------------------


def _milliseconds(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return int(min(value, 2**53))


def state_of(
    raw: object,
    server: str,
    era: Literal["modern", "handshake"],
    *,
    protocol_version: str = "",
    session_id: str | None = None,
    previous: TaskState | None = None,
) -> TaskState:
    """The task a server sent (a CreateTaskResult's task, a tasks/get result, a cancel answer)."""
    if not isinstance(raw, dict):
        raise _malformed(server, "sent a task that is not an object", previous)
    task_id, status = raw.get("taskId"), raw.get("status")
    if not isinstance(task_id, str) or not task_id or len(task_id) > TASK_ID_LIMIT:
        raise _malformed(server, "sent a task without a usable taskId", previous)
    if previous is not None and task_id != previous.task_id:
        raise _malformed(server, "answered for another task than the one asked about", previous)
    if status not in STATUSES:
        raise _malformed(server, f"sent a task status {clean(status, 40)!r} unknown to this client", previous)
    if "pollIntervalMs" in raw:
        interval = _milliseconds(raw.get("pollIntervalMs"))
    elif "pollIntervalMilliseconds" in raw:
        interval = _milliseconds(raw.get("pollIntervalMilliseconds"))
    else:
        interval = _milliseconds(raw.get("pollInterval"))
    if "ttlSeconds" in raw:
        seconds = _milliseconds(raw.get("ttlSeconds"))
        ttl = None if seconds is None else seconds * 1000
    else:
        ttl = _milliseconds(raw.get("ttlMs", raw.get("ttl")))
    request_state = previous.request_state if previous is not None and era == "handshake" else None
    if era == "modern":
        # SEP-2663: the latest value is echoed; a message without one means none is sent.
        given = raw.get("requestState")
        if given is not None and (not isinstance(given, str) or len(given) > REQUEST_STATE_LIMIT):
            raise _malformed(server, "sent a requestState that is no string this client keeps", previous)
        request_state = given
    message = raw.get("statusMessage")
    return TaskState(
        task_id=task_id,
        status=cast(TaskStatus, status),
        era=era,
        status_message=clean(message, MESSAGE_LIMIT * 5) if isinstance(message, str) else "",
        poll_interval_ms=interval,
        ttl_ms=ttl,
        protocol_version=protocol_version or (previous.protocol_version if previous else ""),
        session_id=session_id if session_id is not None else (previous.session_id if previous else None),
        request_state=request_state,
    )


def created(
    result: dict[str, Any], server: str, conversation: ModernConversation | HandshakeConversation
) -> TaskState | None:
    """The task a ``tools/call`` result created, or None for an ordinary result."""
    if conversation.era == "modern":
        if result.get("resultType") != "task":
            return None
        return state_of(result, server, "modern", protocol_version=conversation.protocol_version or "")
    task = result.get("task")
    if not isinstance(task, dict) or "content" in result:
        return None
    return state_of(
        task,
        server,
        "handshake",
        protocol_version=conversation.protocol_version or "",
        session_id=getattr(conversation, "session_id", None),
    )


def wants_task(conversation: HandshakeConversation, options: TaskOptions) -> bool:
    """The 2025-11-25 rule: ask for a task only where the server and the tool both allow it."""
    tasks = conversation.server_capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    declared = isinstance(tools, dict) and isinstance(tools.get("call"), dict)
    return declared and options.task_support in _TASK_SUPPORT


def task_param(options: TaskOptions) -> dict[str, Any]:
    ttl = options.ttl_ms
    return {"ttl": ttl} if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0 else {}


def extension_capabilities(responder: InputResponder | None) -> dict[str, Any]:
    """The 2026 era's per-request capabilities with the tasks extension declared."""
    capabilities = dict(responder.capabilities) if responder is not None else {}
    extensions = dict(capabilities.get("extensions") or {})
    extensions[EXTENSION] = {}
    capabilities["extensions"] = extensions
    return capabilities


# -- following a task to its end -----------------------------------------------------------


class Follower:
    """Polls one task in one conversation until it ends, and returns the tool's result object.

    ``sleep`` waits between polls (a seam, so tests drive a fake clock); the operation's
    ``deadline`` bounds everything: a wait that would leave no room for the next poll is not
    taken (the last poll is made while there is), and the task is ``task_pending``.
    """

    def __init__(
        self,
        conversation: ModernConversation | HandshakeConversation,
        deadline: OperationDeadline,
        options: TaskOptions,
        responder: InputResponder | None,
        sleep: Callable[[float], None],
        tool: str,
    ) -> None:
        self.conversation = conversation
        self.deadline = deadline
        self.options = options
        self.responder = responder
        self.sleep = sleep
        self.server = conversation.server
        self.tool = tool
        self.answered: set[str] = set()
        self.rounds = 0
        # The last tasks/get answer as sent (its result, error or inputRequests are read from it).
        self.raw: dict[str, Any] = {}
        # What the deadline will have left when ``follow_seconds`` are spent (None: no such bound).
        follow = options.follow_seconds
        self.stop_at_ns = None if follow is None else deadline.remaining_ns() - math.ceil(follow * 1e9)

    # Each public step turns every failure into a TaskError carrying the state it knew.

    def follow(self, state: TaskState, *, look_first: bool = False) -> tuple[dict[str, Any], TaskState, int]:
        """The final ``CallToolResult`` object, the task's last state and the last leg's latency."""
        latency_ms = 0
        try:
            if look_first:
                # A stored state: the caller has it already; a change is announced as it is seen.
                state, latency_ms = self.get(state)
            else:
                self.announce(state)
            while True:
                if state.terminal:
                    return self.finish(state, latency_ms)
                if state.status == "input_required":
                    answer = self.give_input(state)
                    if answer is not None:
                        return answer
                room_ns = self.deadline.remaining_ns() - MINIMUM_LEG_SECONDS * 1_000_000_000
                if room_ns <= 0:
                    raise self.pending(state, "the operation's budget has no room for another poll")
                if self.stop_at_ns is not None:
                    room_ns = min(room_ns, room_ns - self.stop_at_ns)
                    if room_ns <= 0:
                        raise self.pending(state, "the time to follow the task has no room for another poll")
                self.sleep(min(self.options.poll_seconds(state), room_ns / 1e9))
                state, latency_ms = self.get(state)
        except TaskError:
            raise
        except McpTransportError as exc:
            raise self.after(exc, state) from exc

    def get(self, state: TaskState) -> tuple[TaskState, int]:
        try:
            raw, latency_ms = self.request("tasks/get", state)
        except McpTransportError as exc:
            raise self.lost_or(exc, state) from exc
        self.raw = raw
        new = state_of(
            raw,
            self.server,
            state.era,
            protocol_version=state.protocol_version,
            previous=state,
        )
        if (new.status, new.status_message) != (state.status, state.status_message):
            self.announce(new)
        return new, latency_ms

    def cancel(self, state: TaskState) -> TaskState:
        """``tasks/cancel``: the state the server reports after it (2025-11-25), or, for an
        acknowledgement (SEP-2663) or a refusal of a task that already ended, a fresh look."""
        try:
            try:
                raw, _ = self.request("tasks/cancel", state)
            except McpTransportError as exc:
                if exc.kind != "rpc_error" or exc.code != modern.INVALID_PARAMS:
                    raise
                # 2025-11-25 refuses to cancel a task that ended, and one it does not know, alike.
                return self.get(state)[0]
            if state.era == "handshake" and "taskId" in raw:
                return state_of(raw, self.server, "handshake", previous=state)
            return self.get(state)[0]
        except TaskError:
            raise
        except McpTransportError as exc:
            raise self.after(exc, state) from exc

    def finish(self, state: TaskState, latency_ms: int) -> tuple[dict[str, Any], TaskState, int]:
        if state.status == "cancelled":
            raise TaskError(
                "task_cancelled",
                self.server,
                f"MCP server {self.server!r} cancelled the task of tool {self._tool()!r}"
                f"{_said(state)}. The tool may have run in part; the call is not sent again.",
                task=state,
            )
        if state.era == "modern":
            if state.status == "failed":
                raise self.failed(self.raw.get("error"), state)
            result = self.raw.get("result")
            if not isinstance(result, dict):
                raise _malformed(self.server, "sent a completed task without a result object", state)
            return result, state, latency_ms
        # 2025-11-25: the result (or the error) of the call, fetched once, whatever the status.
        result, latency_ms = self.fetch(state)
        return result, state, latency_ms

    def fetch(self, state: TaskState) -> tuple[dict[str, Any], int]:
        """``tasks/result``, once: the call's own answer (a JSON-RPC error is the task's failure)."""
        try:
            return self.request("tasks/result", state)
        except McpTransportError as exc:
            if exc.kind == "rpc_error" and exc.code != modern.INVALID_PARAMS:
                raise self.failed({"code": exc.code, "message": _message_of(exc)}, state) from exc
            raise self.lost_or(exc, state) from exc

    def give_input(self, state: TaskState) -> tuple[dict[str, Any], TaskState, int] | None:
        """Answer what the task waits for through the responder; None to go on polling, or the
        final answer when the era delivers it with the input (2025-11-25's tasks/result)."""
        if self.responder is None:
            raise TaskError(
                "input_required",
                self.server,
                f"MCP server {self.server!r} needs input (elicitation) for the task of tool "
                f"{self._tool()!r}{_said(state)}, and this call gave no responder to answer it. The "
                "task is kept; the tool may have run in part, and the call is not sent again.",
                task=state,
            )
        if state.era == "handshake":
            # The server asks on the stream of tasks/result (answered by the conversation's
            # responder hook); the answer that ends that stream is the call's result.
            result, latency_ms = self.fetch(state)
            # tasks/result answers once the task ended; a JSON-RPC error would have been raised.
            final = dataclasses.replace(state, status="completed")
            self.announce(final)
            return result, final, latency_ms
        asked = self.raw.get("inputRequests")
        asked = asked if isinstance(asked, dict) else {}
        fresh = {key: value for key, value in asked.items() if key not in self.answered}
        if not fresh:
            return None  # answered already; the server has not caught up yet
        self.rounds += 1
        if self.rounds > MAX_INPUT_ROUNDS:
            raise _malformed(
                self.server, f"asked for input more than {MAX_INPUT_ROUNDS} times in one task", state
            )
        responses = self.responder.answer(fresh)
        missing = sorted(set(fresh) - set(responses))
        if missing:
            wanted = sorted({str(r.get("method")) for r in fresh.values() if isinstance(r, dict)})
            raise TaskError(
                "input_required",
                self.server,
                f"MCP server {self.server!r} needs input for the task of tool {self._tool()!r} "
                f"({clean(', '.join(wanted), 120)}) that this client cannot give. The task is kept; "
                "the call is not sent again.",
                task=state,
            )
        self.answered.update(fresh)
        self.request("tasks/update", state, {"inputResponses": responses})
        return None

    # -- the pieces --------------------------------------------------------------------------

    def request(
        self, method: str, state: TaskState, extra: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], int]:
        params: dict[str, Any] = {"taskId": state.task_id, **(extra or {})}
        if state.era == "modern":
            if state.request_state is not None:
                params["requestState"] = state.request_state
            conversation = cast("ModernConversation", self.conversation)
            return conversation.request(
                method, params, None, capabilities=extension_capabilities(self.responder)
            )
        return self.conversation.request(method, params)

    def announce(self, state: TaskState) -> None:
        if self.options.on_state is None:
            return
        try:
            self.options.on_state(state)
        except Exception:
            # A reporting boundary: keeping the state is the caller's; the task goes on either way.
            logger.warning("MCP task state callback failed", exc_info=True)

    def pending(self, state: TaskState, why: str) -> TaskError:
        return TaskError(
            "task_pending",
            self.server,
            f"MCP server {self.server!r} is still running the task of tool {self._tool()!r} "
            f"(status {state.status}{_said(state)}): {why}. The task is kept, so polling can resume; "
            "the call is not sent again.",
            task=state,
        )

    def failed(self, error: object, state: TaskState) -> TaskError:
        rpc = jsonrpc.error_of(error if error is not None else {}, self.server)
        return TaskError(
            "task_failed",
            self.server,
            f"MCP server {self.server!r} reports the task of tool {self._tool()!r} failed: "
            f"{_message_of(rpc)} The tool may have run; the call is not sent again.",
            task=dataclasses.replace(state, status="failed"),
            code=rpc.code,
            data=rpc.data,
        )

    def lost_or(self, exc: McpTransportError, state: TaskState) -> McpTransportError:
        """-32602 to a task request: the server no longer knows the task (expired or forgotten);
        a handshake-era session the server forgot takes its tasks with it."""
        if isinstance(exc, TaskError):
            return exc
        forgot = (
            exc.kind == "rpc_error" and exc.code == modern.INVALID_PARAMS
        ) or exc.kind == "session_expired"
        if not forgot:
            return self.after(exc, state)
        return TaskError(
            "task_lost",
            self.server,
            f"MCP server {self.server!r} no longer knows the task of tool {self._tool()!r} "
            f"({_message_of(exc)}). Its result cannot be read; the tool may have run, and the call "
            "is not sent again.",
            task=state,
            code=exc.code,
            data=exc.data,
            http_status=exc.http_status,
        )

    def after(self, exc: McpTransportError, state: TaskState) -> TaskError:
        """Any other failure once the task exists: the task is kept, the call was accepted."""
        if exc.kind in ("deadline_exhausted", "timeout"):
            return self.pending(state, f"{_message_of(exc)}")
        return TaskError(
            exc.kind,
            self.server,
            f"{exc} (while following the task of tool {self._tool()!r}: the task is kept, the tool "
            "may have run, and the call is not sent again.)",
            task=state,
            http_status=exc.http_status,
            code=exc.code,
            data=exc.data,
        )

    def _tool(self) -> str:
        return clean(self.tool, NAME_LIMIT)


def _said(state: TaskState) -> str:
    return f": {state.status_message}" if state.status_message else ""


def _message_of(exc: McpTransportError) -> str:
    return clean(str(exc), MESSAGE_LIMIT * 2)


def _malformed(server: str, what: str, state: TaskState | None) -> TaskError:
    return TaskError("malformed", server, f"MCP server {server!r} {what}.", task=state)
