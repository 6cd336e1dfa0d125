"""The tool-call pool, where calls run when the caller is async or runs several at once.

Not ``sync_to_async``'s one thread for sync code: it would run every call of every request one
after another, and a network-bound call needs no particular thread. A pool thread never waits
on the pool, so a saturated pool cannot deadlock on itself.
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
_here = threading.local()


def refuse_in_event_loop(function: str, twin: str) -> None:
    """Fail loudly rather than block the loop: a programming error, not a tool failure."""
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
    return getattr(_here, "in_pool", False)


def pool() -> Workers:
    """The process's tool-call pool, started on first use."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = Workers("nr-llm-tool", lambda: conf.TOOL_THREADS, _call)
        return _pool


def close_pool() -> None:
    """Stop the pool and its connections (before a test database is dropped)."""
    global _pool
    with _lock:
        current, _pool = _pool, None
    if current is not None:
        current.close()


def stop_at_exit(grace: float | None = None) -> tuple[int, int]:
    """Finish the calls in flight and drop the queued ones, never sent; (in flight, dropped)."""
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
    # Daemon threads: otherwise exit cuts calls off mid-way, leaving rows "running".
    stop_at_exit()


def _forked() -> None:
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
    # Not asgiref's: Django keeps a thread's connection there, and a copy would leak one per call.
    return [
        (var, value)
        for var, value in contextvars.copy_context().items()
        if not var.name.startswith("asgiref")
    ]


def submit(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Future[T]:
    """Run ``function`` on the pool with the caller's context variables; from a pool thread, in
    place (or beside it under a loop), since waiting on the pool could wait for good."""
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
    """The ORM refuses to run under a loop, and the pool may be busy waiting for this."""
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
    """Await ``function`` on the pool; a cancelled caller stops waiting, but a started call
    runs to its end and records its outcome."""
    future = submit(function, *args, **kwargs)
    return await asyncio.wrap_future(future)
