"""The ``execute_tool {tool}`` span: one INTERNAL span per ``execute()``, ``resume()`` (and
their async twins), per the GenAI semantic conventions' execute_tool span
(semantic-conventions-genai v0.1.0, status Development; docs/telemetry.md).

An entry point takes it with one line, ``@telemetry.traced("execute")``; the MCP requests the
call makes are CLIENT spans under it (``nr_llm/mcp/wire/telemetry.py``). What only the call's code
learns on the way (the catalogue row, the error kind) it hands over with ``describe`` and
``note_error``, each a no-op when nothing is traced.

Arguments and results are never attributes unless ``NR_LLM_OTEL_CAPTURE_CONTENT`` names a data
class, and then only for a tool whose server's data class is within both it and the caller's
ceiling, masked of the server's credential and clipped to the ledger's preview cap.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ..conf import conf
from ..governance import ceiling as ceilings
from ..mcp.wire.telemetry import ENABLED, clip, current, fail, installed, masked, noted, tracer
from ..models import McpServer
from ..servers.credentials import CredentialUnavailable
from .results import ToolResult

if ENABLED:
    from opentelemetry import trace

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger("nr_llm.tools")

_ARGUMENTS = "gen_ai.tool.call.arguments"
_RESULT = "gen_ai.tool.call.result"


@dataclass
class _Recorder:
    span: Any
    entry: str
    arguments: Callable[[], object] | None = field(default=None, repr=False)
    server: str = ""
    data_class: str = ""
    ceiling: str = ""
    requires_approval: bool | None = None
    error_kind: str = ""
    #: Content capture: the credentials to mask, or None when content is not recorded. Decided
    #: where ``describe`` runs (the call's own thread: an async twin's close cannot query).
    secrets: tuple[str, ...] | None = field(default=None, repr=False)
    #: An async twin that runs its sync entry point in a thread: that one joins this span.
    lends_span: bool = False


_current: ContextVar[_Recorder | None] = ContextVar("nr_llm_execute_tool_span", default=None)


def traced(entry: str) -> Callable[[F], F]:
    """Decorate an entry point whose first parameter is the tool's name (``execute``) or a
    ledger id (``resume``), with a ``tool_call_id`` keyword, returning a ``ToolResult``.

    ``entry``: "execute" or "resume" (an ``a``-prefixed name for an async twin). An async twin
    that runs the sync entry point (``sync_to_async``) gets one span, not two."""

    def decorate(function: F) -> F:
        if not ENABLED:
            return function
        signature = inspect.signature(function)
        resuming = entry.removeprefix("a") == "resume"

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def asynchronous(*args: Any, **kwargs: Any) -> Any:
                if not installed():
                    return await function(*args, **kwargs)
                with _span(signature, resuming, args, kwargs, lends=True) as close:
                    return close(await function(*args, **kwargs))

            return cast(F, asynchronous)

        @functools.wraps(function)
        def synchronous(*args: Any, **kwargs: Any) -> Any:
            if not installed():
                return function(*args, **kwargs)
            outer = _current.get()
            if outer is not None and outer.lends_span:
                outer.lends_span = False  # the twin's one call joins; a nested call gets its own
                return function(*args, **kwargs)
            with _span(signature, resuming, args, kwargs, lends=False) as close:
                return close(function(*args, **kwargs))

        return cast(F, synchronous)

    return decorate


def describe(
    tool: str,
    server: str,
    data_class: str,
    ceiling: str,
    requires_approval: bool,
    arguments: Callable[[], object],
) -> None:
    """The call's catalogue facts, once known; ``arguments`` is read only to capture content."""
    recorder = _current.get()
    if recorder is None:
        return
    try:
        name = clip(tool)
        recorder.span.update_name(f"execute_tool {name}")
        recorder.span.set_attribute("gen_ai.tool.name", name)
        recorder.server, recorder.data_class, recorder.ceiling = server, data_class, ceiling
        recorder.requires_approval = requires_approval
        recorder.arguments = arguments
        recorder.secrets = _capture_secrets(server, data_class, ceiling)
    except Exception as exc:
        # A reporting boundary inside the call: its outcome is never the telemetry's to change.
        noted(recorder.span, exc)


def undescribe() -> None:
    """Forget what ``describe`` said: the call starts again from a row read anew (whose server,
    data class or very existence may differ)."""
    recorder = _current.get()
    if recorder is not None:
        recorder.server, recorder.data_class, recorder.ceiling = "", "", ""
        recorder.requires_approval, recorder.arguments, recorder.secrets = None, None, None


def note_error(kind: str) -> None:
    """The ledger's error kind of the call's outcome ("" for a success)."""
    recorder = _current.get()
    if recorder is not None:
        recorder.error_kind = kind


@contextmanager
def _span(
    signature: inspect.Signature, resuming: bool, args: Any, kwargs: Any, *, lends: bool
) -> Iterator[Callable[[ToolResult], ToolResult]]:
    try:
        span = _start(signature, resuming, args, kwargs)
    except Exception:
        # A reporting boundary: a tracer that fails leaves the call untraced, never failed.
        logger.warning("the execute_tool span could not be started", exc_info=True)
        yield _unchanged
        return
    if not span.is_recording():
        # The API's no-op: nothing to describe, no content to read.
        with trace.use_span(span, end_on_exit=True):
            yield _unchanged
        return
    recorder = _Recorder(span, "resume" if resuming else "execute", lends_span=lends)
    token = _current.set(recorder)
    try:
        with current(span):
            yield functools.partial(_close, recorder)
    except (Exception, asyncio.CancelledError) as exc:
        # execute() never raises; a cancelled await (an async twin) does, and is named by type.
        fail(span, type(exc).__qualname__)
        raise
    finally:
        _current.reset(token)
        span.end()


def _unchanged(result: ToolResult) -> ToolResult:
    return result


def _start(signature: inspect.Signature, resuming: bool, args: Any, kwargs: Any) -> Any:
    try:
        bound = signature.bind(*args, **kwargs).arguments
    except TypeError:
        bound = {}  # the call itself raises it, as it would undecorated
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool"}
    name = "execute_tool"
    first = next(iter(bound.values()), None)
    if not resuming and isinstance(first, str):
        attributes["gen_ai.tool.name"] = tool = clip(first)
        name = f"execute_tool {tool}"
    call_id = bound.get("tool_call_id")
    if isinstance(call_id, str | int) and not isinstance(call_id, bool):
        attributes["gen_ai.tool.call.id"] = clip(call_id)
    if resuming:
        attributes["nr_llm.tool_call.resumed"] = True
    return tracer().start_span(name, kind=trace.SpanKind.INTERNAL, attributes=attributes)


def _close(recorder: _Recorder, result: ToolResult) -> ToolResult:
    """Set what the result tells; a reporting boundary: telemetry never changes the result."""
    try:
        if isinstance(result, ToolResult):
            _record(recorder, result)
    except Exception as exc:
        noted(recorder.span, exc)
    return result


def _record(recorder: _Recorder, result: ToolResult) -> None:
    span = recorder.span
    server = result.server or recorder.server
    if server:
        span.set_attribute("nr_llm.server", clip(server))
    if result.call_id is not None:
        span.set_attribute("nr_llm.tool_call.id", str(result.call_id))
    span.set_attribute("nr_llm.tool_call.status", result.status)
    if recorder.data_class:
        span.set_attribute("nr_llm.data_class", clip(recorder.data_class))
    if recorder.ceiling:
        span.set_attribute("nr_llm.data_class_ceiling", clip(recorder.ceiling))
    approval = _approval(recorder, result)
    if approval:
        span.set_attribute("nr_llm.approval.status", approval)
    if result.is_error:
        kind = recorder.error_kind or (result.status if result.status in ("denied", "expired") else "_OTHER")
        fail(span, kind)
    _capture(recorder, result)


def _approval(recorder: _Recorder, result: ToolResult) -> str:
    """``not_required``, ``awaiting_approval``, ``approved``, ``denied`` or ``expired``; "" when
    the call never reached the approval question (refused before it, or unknown)."""
    if result.status in ("awaiting_approval", "denied", "expired"):
        return result.status
    if recorder.entry == "resume":
        return "approved" if recorder.requires_approval else ""
    if recorder.requires_approval is False:
        return "not_required"
    return ""


def _capture_secrets(server: str, data_class: str, ceiling: str) -> tuple[str, ...] | None:
    """The credential to mask when content is to be recorded; None when it is not: not opted
    in, a data class beyond the setting or the caller's ceiling, or a credential that cannot be
    read (so could not be masked)."""
    allowed = conf.OTEL_CAPTURE_CONTENT
    if not allowed or not data_class or conf.TOOL_CALL_PREVIEW_CHARS == 0:
        return None
    if not (ceilings.allows(allowed, data_class) and ceilings.allows(ceiling, data_class)):
        return None
    return _credential(server)


def _capture(recorder: _Recorder, result: ToolResult) -> None:
    """Opt-in content, within both ceilings and the preview cap, the credential masked."""
    secrets, limit = recorder.secrets, conf.TOOL_CALL_PREVIEW_CHARS
    if secrets is None or recorder.arguments is None or limit == 0:
        return
    value = recorder.arguments()
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    recorder.span.set_attribute(_ARGUMENTS, _preview(masked(text, secrets), limit))
    if not result.is_error:
        recorder.span.set_attribute(_RESULT, _preview(masked(result.text, secrets), limit))


def _credential(identifier: str) -> tuple[str, ...] | None:
    """The server's configured credential to mask; None when it is configured and unreadable."""
    server = McpServer.objects.filter(identifier=identifier).first()
    if server is None:
        return ()
    try:
        secret = server.resolve_credential()
    except CredentialUnavailable:
        return None
    return (secret,) if secret else ()


def _preview(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
