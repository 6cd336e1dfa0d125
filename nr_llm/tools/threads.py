"""Where tool calls run when the caller is async or runs several at once: the tool-call pool.

The thread policy, chosen on purpose: ``sync_to_async``'s default (``thread_sensitive=True``)
would run every call of every request on the one thread Django keeps for sync code, one
after another. A tool call is network-bound and needs no particular thread (no transaction
of the caller's can span it: an async view has none, and the ledger writes in its own), so
calls run on a process-wide pool of ``NR_LLM_TOOL_THREADS`` threads, side by side. Each call
is a unit of work as a request is: its thread's database connection is recycled before and
after as Django's request signals do (``close_old_connections``, which honours
``CONN_MAX_AGE`` and ``CONN_HEALTH_CHECKS``), and a thread idle past ``CONN_MAX_AGE`` lets its
connection go (``own_transaction.Workers``): a process holds no more connections than its live
work needs.

A pool thread never waits on the pool: work handed over from one (a local tool that runs a turn
of its own, an agent used as a tool) runs in place on that thread, so a saturated pool cannot
deadlock on itself. At exit the pool finishes the calls in flight and drops the queued ones,
which were never sent, and logs how many of each.

The sync API called from a running event loop (an ``async def`` view) would block the loop
and every request it serves; it fails loudly instead, naming the twin to await.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import functools
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, ParamSpec, TypeVar

from django.core.exceptions import SynchronousOnlyOperation
from django.db import connection

from ..conf import conf
from ..own_transaction import Workers

P = ParamSpec("P")
T = TypeVar("T")
logger = logging.getLogger("nr_llm.tools")

_lock = threading.Lock()
_pool: Workers | None = None
#: Marks the pool's threads while they run a job (``on_pool_thread``).
_here = threading.local()


def refuse_in_event_loop(function: str, twin: str) -> None:
    """Raise ``SynchronousOnlyOperation`` naming ``tools.<twin>`` when called on a running loop.

    Not a tool failure, so not a result: a programming error the developer must see.
    ``DJANGO_ALLOW_ASYNC_UNSAFE`` lifts it, as it lifts Django's own guard (a notebook).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    if os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE"):
        return
    raise SynchronousOnlyOperation(
        f"tools.{function}() was called from a running event loop (an async view?), where it would "
        f"block every request the loop serves: use `await tools.{twin}(...)` instead."
    )


def _call(work: Callable[[], Any]) -> Any:
    _here.in_pool = True
    try:
        return work()
    finally:
        _here.in_pool = False


def on_pool_thread() -> bool:
    """True on a pool thread running a job: work it hands over must not wait for the pool."""
    return getattr(_here, "in_pool", False)


def pool() -> Workers:
    """The process's tool-call pool, started on first use."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = Workers("nr-llm-tool", lambda: conf.TOOL_THREADS, _call)
        return _pool


def close_pool() -> None:
    """Close every pool thread's database connection and stop the pool (before a test database
    is dropped); the next call starts a new one."""
    global _pool
    with _lock:
        current, _pool = _pool, None
    if current is not None:
        current.close()


def stop_at_exit(grace: float | None = None) -> tuple[int, int]:
    """Finish the calls in flight (within ``grace``, default one operation budget and a second)
    and drop the queued ones, never sent; log and return (in flight, dropped)."""
    with _lock:
        current = _pool
    if current is None:
        return 0, 0
    wait = conf.MCP_OPERATION_TIMEOUT + 1.0 if grace is None else grace
    in_flight, dropped, unfinished = current.stop(wait)
    if in_flight or dropped:
        logger.warning(
            "the tool-call pool stopped: %d call(s) in flight were let finish (%d still running after "
            "%.0f s), %d queued call(s) were dropped, never sent",
            in_flight,
            unfinished,
            wait,
            dropped,
        )
    return in_flight, dropped


@atexit.register
def _stop_at_exit() -> None:
    # The threads are daemons: without this, a process that exits cuts its calls off mid-way
    # (rows left "running" for the reaper) and a queued call could start during interpreter exit.
    stop_at_exit()


def _forked() -> None:
    # A forked child has none of the parent's threads: it starts a pool of its own.
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forked)


def _as_unit_of_work(
    carried: list[tuple[contextvars.ContextVar[object], object]],
    function: Callable[P, T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    tokens = [(var, var.set(value)) for var, value in carried]
    try:
        return function(*args, **kwargs)
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def _carried() -> list[tuple[contextvars.ContextVar[object], object]]:
    # The caller's context variables (a trace's span, a request's id) go along; asgiref's
    # do not: Django keeps a thread's database connection in them, and the pool thread's own
    # must stay its own (run in a copied context, it would be a new connection per call,
    # dropped unclosed with the copy when CONN_MAX_AGE keeps connections).
    return [
        (var, value)
        for var, value in contextvars.copy_context().items()
        if not var.name.startswith("asgiref")
    ]


def submit(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
    """Run ``function`` on the pool with the caller's context variables carried over.

    On a pool thread it never waits for the pool (waiting for another pool thread from one could
    wait for good once every thread does the same): it runs here and now (the future returned is
    done), or, under an event loop a local tool runs there, on a thread of its own.
    """
    work = functools.partial(_as_unit_of_work, _carried(), function, *args, **kwargs)
    if not on_pool_thread():
        return pool().submit(work)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _settled_here(work)
    return _beside(work)


def _settled_here(work: Callable[[], T]) -> Future[T]:
    done: Future[T] = Future()
    done.set_running_or_notify_cancel()
    try:
        done.set_result(work())
    except BaseException as exc:  # handed to the caller, raised there, as the pool does
        done.set_exception(exc)
    return done


def _beside(work: Callable[[], T]) -> Future[T]:
    """``work`` on a new thread, marked as the pool's: the ORM refuses to run under a loop, and
    the pool's threads may all be waiting for this one."""
    done: Future[T] = Future()

    def serve() -> None:
        try:
            result = _settled_here(functools.partial(_call, work))
            exc = result.exception()
            if exc is None:
                done.set_result(result.result())
            else:
                done.set_exception(exc)
        finally:
            connection.close()  # this thread's own, gone with it

    done.set_running_or_notify_cancel()
    threading.Thread(target=serve, name="nr-llm-tool-nested", daemon=True).start()
    return done


async def run(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Await ``function`` on the pool.

    A caller cancelled meanwhile (a client that went away) stops waiting; a call that has not
    started never starts, and one that has runs to its end on its thread and records its
    outcome there: it is never left ``running`` in the ledger, nor sent again.
    """
    future = submit(function, *args, **kwargs)
    return await asyncio.wrap_future(future)
