"""A model's turn: ``execute_many`` and ``aexecute_many`` run its tool calls side by side.

Each call is an ``execute()``, with every contract of one (approval, ceiling, ledger row,
exactly once); the turn adds only when each starts:

- concurrently, at most ``NR_LLM_TURN_CONCURRENCY`` at once, and at most a server's
  ``max_concurrent_calls`` (else ``NR_LLM_TOOL_CONCURRENCY_PER_SERVER``) to one server;
- a tool an operator marked "run alone" (and, on a server set to run its writes alone, a tool
  the server does not annotate ``readOnlyHint``) after the others, one at a time, in order;
- nothing starts once the turn's budget (its slowest call's operation budget) is spent: a call
  that could not start in time is not run and says so, so the turn ends within that budget
  when its calls fit the caps, and never hangs on a queue. That holds on the pool too: a call
  still queued for a busy pool's thread when the budget passes is taken back, never sent, and
  the thread that would take it later checks the time first;
- a turn run on a pool thread (a local tool that runs a turn: an agent used as a tool) runs
  its calls there, one after another, under the same budget: it never waits for the pool
  threads it and its caller occupy.

One call failing cancels nothing else; results come back in the calls' order, one per call.
A turn asking for more than ``NR_LLM_TURN_MAX_CALLS`` runs none of them (a model in a loop is
not served a denial of service); a call id seen twice runs once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any, cast

from ..conf import conf
from ..governance.ledger import WallClock
from ..mcp import clean
from ..models import McpTool
from ..own_transaction import caller_blocks_own_transaction
from . import threads
from .elicit import Responder
from .execution import ToolCaller, execute, planned_row
from .lookup import tools_by_names
from .results import ToolResult
from .turn_calls import TurnCall, read_call

logger = logging.getLogger("nr_llm.tools")

#: How long the rows a turn's plan read stand for a call's own read: an operator's change (a
#: tool disabled, approval required) reaches every call that starts later, as it reaches a
#: lone execute() that reads its row as it starts.
PLANNED_ROW_SECONDS = 1.0


@dataclass(frozen=True)
class _Planned:
    index: int
    call: TurnCall
    #: The server's identifier ("" for a local or an unknown tool: no per-server cap).
    server: str = ""
    cap: int = 0
    alone: bool = False
    budget: float = 0.0
    #: The catalogue row the plan read, and when: a call that starts while it is fresh uses it
    #: instead of reading it again; one that waited for a place reads it anew.
    row: McpTool | None = field(default=None, repr=False, compare=False)
    read_at: float = 0.0


@dataclass
class _Turn:
    """What a turn is to run, and the results so far (None: not yet)."""

    concurrent: list[_Planned]
    alone: list[_Planned]
    results: list[ToolResult | None]
    deadline: float

    #: The provider's id of each call, in order (None for a pair): every result carries its own.
    ids: list[str | None] = field(default_factory=list)

    def finished(self) -> list[ToolResult]:
        return [
            result
            if result.tool_call_id is not None or call_id is None
            else dataclasses.replace(result, tool_call_id=call_id)
            for result, call_id in zip(self.results, self.ids, strict=True)
            if result is not None
        ]


def execute_many(
    calls: Iterable[object],
    *,
    client: ToolCaller | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    clock: WallClock | None = None,
    responder: Responder | None = None,
) -> list[ToolResult]:
    """Run one model turn's tool calls; their results in the same order (never an exception).

    ``calls``: ``(name, arguments)`` pairs or the provider's tool-call objects (``turn_calls``).
    The other arguments are ``execute()``'s, for every call. Each result carries its call's
    provider id (``tool_call_id``), so ``tool_messages(provider, results)`` takes the list as
    it is. From a running event loop it
    raises ``SynchronousOnlyOperation``: await ``aexecute_many``.
    """
    threads.refuse_in_event_loop("execute_many", "aexecute_many")
    run = _runner(client, actor, data_class_ceiling, clock, responder)
    turn = _plan(_read(calls))
    if caller_blocks_own_transaction() or threads.on_pool_thread():
        # SQLite inside the caller's transaction: another thread's connection would wait on
        # the caller's write lock. On a pool thread: the pool's other threads may all be
        # waiting for this one. Either way the calls run here, one after another.
        _run_in_place(turn, run)
    else:
        _drive(turn, run)
    return turn.finished()


async def aexecute_many(
    calls: Iterable[object],
    *,
    client: ToolCaller | None = None,
    actor: object = None,
    data_class_ceiling: str | None = None,
    clock: WallClock | None = None,
    responder: Responder | None = None,
) -> list[ToolResult]:
    """``execute_many`` for an async caller.

    Cancelled (the client went away), it stops waiting: a call not yet started never starts,
    one that started ends on its thread and records its outcome.
    """
    run = _runner(client, actor, data_class_ceiling, clock, responder)
    if threads.on_pool_thread():
        # A loop a local tool runs on a pool thread (asyncio.run), and the pool may be all
        # taken: the turn runs as a nested sync turn does, on a thread of its own (the ORM
        # refuses to run under the loop).
        return await threads.run(_in_place, _read(calls), run)
    planned = _read(calls)
    turn = await _aplan(planned, time.monotonic())
    if turn is None:
        ids = [p.call.id for p in planned]
        return _Turn([], [], [_late() for _ in planned], 0.0, ids).finished()
    await _adrive(turn, run)
    return turn.finished()


async def _aplan(planned: list[_Planned], started: float) -> _Turn | None:
    """The plan, read on the pool; None when no pool thread took it within the budget a turn
    has before its rows are read (the installation's): a busy pool never holds a turn past it."""
    future = threads.submit(_plan, planned, started)
    waited = asyncio.wrap_future(future)
    try:
        done, _ = await asyncio.wait([waited], timeout=conf.MCP_OPERATION_TIMEOUT + 1.0)
        if not done and future.cancel():
            return None
        return await waited
    except asyncio.CancelledError:
        future.cancel()  # a plan not started never starts
        raise


def _in_place(calls: list[_Planned], run: Callable[[_Planned], ToolResult]) -> list[ToolResult]:
    turn = _plan(calls)
    _run_in_place(turn, run)
    return turn.finished()


def _run_in_place(turn: _Turn, run: Callable[[_Planned], ToolResult]) -> None:
    for planned in turn.concurrent + turn.alone:
        if not _too_late(turn, planned):
            turn.results[planned.index] = run(planned)


def _runner(
    client: ToolCaller | None,
    actor: object,
    ceiling: str | None,
    clock: WallClock | None,
    responder: Responder | None,
) -> Callable[[_Planned], ToolResult]:
    def run(planned: _Planned) -> ToolResult:
        if planned.call.problem:
            return _not_run(f"call {planned.index + 1} of this turn was not run: {planned.call.problem}")
        fresh = time.monotonic() - planned.read_at <= PLANNED_ROW_SECONDS
        with planned_row(planned.row if fresh else None):
            return execute(
                cast(str, planned.call.name),
                cast(dict[str, Any], planned.call.arguments),
                client=client,
                actor=actor,
                data_class_ceiling=ceiling,
                clock=clock,
                tool_call_id=planned.call.id,
                responder=responder,
            )

    return run


def _read(calls: Iterable[object]) -> list[_Planned]:
    if isinstance(calls, str | bytes | dict) or not isinstance(calls, Iterable):
        raise TypeError(
            f"execute_many takes the turn's list of tool calls, not a {type(calls).__name__} "
            "(for one call, use execute)"
        )
    return [_Planned(index, read_call(item)) for index, item in enumerate(calls)]


def _plan(planned: list[_Planned], started: float | None = None) -> _Turn:
    """Where each call stands: refused by the turn, run alongside, or run alone after; the
    turn's budget counts from ``started`` (when the caller asked), else from now."""
    results: list[ToolResult | None] = [None] * len(planned)
    limit = conf.TURN_MAX_CALLS
    if len(planned) > limit:
        logger.warning("a turn of %d tool calls was refused (NR_LLM_TURN_MAX_CALLS %d)", len(planned), limit)
        text = (
            f"not run: this turn asked for {len(planned)} tool calls, more than the {limit} this site runs "
            "in one turn (NR_LLM_TURN_MAX_CALLS); none of them was run. Ask for fewer at a time."
        )
        ids = [p.call.id for p in planned]
        return _Turn([], [], [_not_run(text) for _ in planned], time.monotonic(), ids)
    read_at = time.monotonic()  # the rows are as fresh as this, whichever call runs them
    rows = tools_by_names({p.call.name for p in planned if isinstance(p.call.name, str)})
    concurrent: list[_Planned] = []
    alone: list[_Planned] = []
    seen: set[str] = set()
    for each in planned:
        call = each.call
        if call.id is not None and call.id in seen:
            results[each.index] = _not_run(
                f"not run: the call id {clean(call.id, 100)!r} appears more than once in this turn; "
                "the first of them is the one run."
            )
            continue
        if call.id is not None:
            seen.add(call.id)
        row = rows.get(call.name) if isinstance(call.name, str) else None
        placed = _placed(each, row, read_at)
        (alone if placed.alone else concurrent).append(placed)
    budget = max((p.budget for p in concurrent + alone), default=0.0)
    deadline = (time.monotonic() if started is None else started) + budget
    return _Turn(concurrent, alone, results, deadline, [p.call.id for p in planned])


def _placed(each: _Planned, row: McpTool | None, read_at: float) -> _Planned:
    if row is None:  # a local tool, or one execute() refuses as unknown
        return _Planned(each.index, each.call, budget=conf.MCP_OPERATION_TIMEOUT)
    server = row.server
    annotations = row.remote_annotations if isinstance(row.remote_annotations, dict) else {}
    read_only = annotations.get("readOnlyHint") is True
    return _Planned(
        each.index,
        each.call,
        server=server.identifier,
        cap=server.max_concurrent_calls or conf.TOOL_CONCURRENCY_PER_SERVER,
        alone=row.run_alone or (server.run_writes_alone and not read_only),
        # A request may overrun its budget by under a second (docs/mcp-client.md).
        budget=server.budget_seconds + 1.0,
        row=row,
        read_at=read_at,
    )


class _Slots:
    """The caps: calls running at once, overall and per server."""

    def __init__(self) -> None:
        self.overall = conf.TURN_CONCURRENCY
        self.running = 0
        self.per_server: Counter[str] = Counter()

    def take(self, planned: _Planned) -> bool:
        server = planned.server
        if self.running >= self.overall or (server and self.per_server[server] >= planned.cap):
            return False
        self.running += 1
        self.per_server[planned.server] += 1
        return True

    def release(self, planned: _Planned) -> None:
        self.running -= 1
        self.per_server[planned.server] -= 1


def _startable(turn: _Turn, slots: _Slots) -> list[_Planned]:
    """The waiting calls that may start now, in order; those past the turn's budget end here."""
    started = []
    for planned in list(turn.concurrent):
        if _too_late(turn, planned):
            turn.concurrent.remove(planned)
        elif slots.take(planned):
            turn.concurrent.remove(planned)
            started.append(planned)
    return started


def _too_late(turn: _Turn, planned: _Planned) -> bool:
    if time.monotonic() < turn.deadline:
        return False
    turn.results[planned.index] = _late()
    return True


def _late() -> ToolResult:
    return _not_run(
        "not run: this turn's time ran out before the call could start (other calls of the turn held "
        "its places, or this site's tool threads were all busy); it was not sent. Call it again if "
        "it is still needed."
    )


def _in_time(turn: _Turn, run: Callable[[_Planned], ToolResult], planned: _Planned) -> ToolResult:
    """``run`` on the pool thread that took the call, unless the turn's time ran out while the
    call waited in the pool's queue."""
    if time.monotonic() >= turn.deadline:
        return _late()
    return run(planned)


def _submit(turn: _Turn, run: Callable[[_Planned], ToolResult], planned: _Planned) -> Future[ToolResult]:
    return threads.submit(_in_time, turn, run, planned)


def _left(turn: _Turn) -> float | None:
    """How long to wait for a running call before taking back queued ones (None: no limit)."""
    left = turn.deadline - time.monotonic()
    return left if left > 0 else None


def _taken_back(turn: _Turn, futures: dict[Future[ToolResult], _Planned], slots: _Slots | None) -> None:
    """At the turn's deadline, the calls no pool thread has started yet never will (``cancel``
    succeeds only for those): each ends "not run"; those that started are waited for."""
    if time.monotonic() < turn.deadline:
        return
    for future, planned in list(futures.items()):
        if future.cancel():
            futures.pop(future)
            if slots is not None:
                slots.release(planned)
            turn.results[planned.index] = _late()


def _drive(turn: _Turn, run: Callable[[_Planned], ToolResult]) -> None:
    slots = _Slots()
    running: dict[Future[ToolResult], _Planned] = {}
    while turn.concurrent or running:
        for planned in _startable(turn, slots):
            running[_submit(turn, run, planned)] = planned
        if not running:
            break
        done, _ = wait(running, timeout=_left(turn), return_when=FIRST_COMPLETED)
        for future in done:
            planned = running.pop(future)
            slots.release(planned)
            turn.results[planned.index] = _outcome(future, planned)
        _taken_back(turn, running, slots)
    for planned in turn.alone:
        if not _too_late(turn, planned):
            alone = {_submit(turn, run, planned): planned}
            while alone:
                done, _ = wait(alone, timeout=_left(turn))
                for future in done:
                    turn.results[alone.pop(future).index] = _outcome(future, planned)
                _taken_back(turn, alone, None)


async def _adrive(turn: _Turn, run: Callable[[_Planned], ToolResult]) -> None:
    slots = _Slots()
    running: dict[asyncio.Future[ToolResult], tuple[_Planned, Future[ToolResult]]] = {}
    try:
        while turn.concurrent or running:
            for planned in _startable(turn, slots):
                future = _submit(turn, run, planned)
                running[asyncio.wrap_future(future)] = (planned, future)
            if not running:
                break
            done, _ = await asyncio.wait(running, timeout=_left(turn), return_when=asyncio.FIRST_COMPLETED)
            for waited in done:
                planned, future = running.pop(waited)
                slots.release(planned)
                turn.results[planned.index] = _outcome(future, planned)
            _ataken_back(turn, running, slots)
        for planned in turn.alone:
            if not _too_late(turn, planned):
                future = _submit(turn, run, planned)
                running[asyncio.wrap_future(future)] = (planned, future)
                while running:
                    done, _ = await asyncio.wait(running, timeout=_left(turn))
                    for waited in done:
                        running.pop(waited)
                        turn.results[planned.index] = _outcome(future, planned)
                    _ataken_back(turn, running, None)
    except asyncio.CancelledError:
        # What has not started never will (a thread the pool has not given it yet); what runs
        # ends on its thread and records its outcome there.
        for _, future in running.values():
            future.cancel()
        raise


def _ataken_back(
    turn: _Turn,
    running: dict[asyncio.Future[ToolResult], tuple[_Planned, Future[ToolResult]]],
    slots: _Slots | None,
) -> None:
    """``_taken_back`` for the async driver, whose keys wrap the pool's futures."""
    if time.monotonic() < turn.deadline:
        return
    for waited, (planned, future) in list(running.items()):
        if future.cancel():
            running.pop(waited)
            if slots is not None:
                slots.release(planned)
            turn.results[planned.index] = _late()


def _outcome(future: Future[ToolResult], planned: _Planned) -> ToolResult:
    try:
        return future.result()
    except Exception as exc:
        # execute() returns its failures; this is a failure around it, so the truth is unknown.
        logger.error("tool call %d of a turn ended unexpectedly", planned.index + 1, exc_info=exc)
        return ToolResult(
            f"the tool call may have run, but this site lost its outcome ({type(exc).__name__}); "
            "check its effect before calling it again",
            True,
            planned.server,
            "failed",
        )


def _not_run(text: str) -> ToolResult:
    return ToolResult(text, True, "", "failed")
