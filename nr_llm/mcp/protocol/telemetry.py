"""OpenTelemetry for the MCP client's JSON-RPC messages, on ``opentelemetry-api`` only (the ``otel`` extra).

Follows the OpenTelemetry semantic conventions for MCP, semantic-conventions-genai v0.1.0
(``docs/gen-ai/mcp.md``, status Development; docs/telemetry.md has the attribute table):

- each JSON-RPC message the client sends is a CLIENT span ``{mcp.method.name} {target}``
  (``traced_request``, around ``Transport.post``: the one place every message leaves);
- the context of that span goes to the server in the message's ``params._meta``
  (``traceparent``, ``tracestate``: the configured propagators), so a server that traces
  makes its span a child of ours;
- its duration goes to the ``mcp.client.operation.duration`` histogram;
- every OAuth leg is a CLIENT span too (``traced_oauth_leg``, wire/telemetry.py), named by
  its HTTP method.

Without the API installed the decorators hand back the function they were given: nothing is
imported and nothing costs. With the API and no SDK, the API's no-op tracer and meter run.

No attribute holds a secret: no URL query, no header, no argument or result, the session id
only as a digest, server text (an error's message) clipped and with this operation's
credentials masked. Every value is bounded (``clip``), whatever a server or caller sends.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..wire.errors import McpTransportError
from ..wire.telemetry import ENABLED as ENABLED
from ..wire.telemetry import (
    SCOPE,
    _providers,
    clip,
    current,
    fail,
    logger,
    masked,
    noted,
    server_attributes,
    tracer,
)

try:
    from opentelemetry import metrics, propagate
    from opentelemetry.trace import SpanKind
except ImportError:  # the optional extra is not installed: every decorator is the identity
    pass

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

DURATION_METRIC = "mcp.client.operation.duration"
#: The convention's ExplicitBucketBoundaries for the duration histogram (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
#: What the client lets a propagator put into ``params._meta``: W3C ``tracestate`` is at most
#: 512 characters; a misbehaving propagator does not get to grow every request.
META_KEYS = 8
META_VALUE_CHARS = 1024


def duration_histogram() -> Any:
    provider = metrics.get_meter_provider()
    cached = _providers.get("histogram")
    if cached is None or cached[0] is not provider:
        histogram = provider.get_meter(SCOPE).create_histogram(
            DURATION_METRIC,
            unit="s",
            description="The duration of the MCP request or notification as observed on the sender "
            "from the time it was sent until the response or ack is received.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        cached = (provider, histogram)
        _providers["histogram"] = cached
    return cached[1]


def session_digest(session_id: str) -> str:
    """What ``mcp.session.id`` carries: a digest, never the id. A session id lets whoever holds
    it speak in the session; the digest still ties the spans of one session together."""
    return "sha256:" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]


def traced_request(
    post: Callable[Concatenate[S, Any, dict[str, Any], P], R],
) -> Callable[Concatenate[S, Any, dict[str, Any], P], R]:
    """Wrap ``Transport.post`` (one JSON-RPC message, its answer in a ``Reply``)."""
    if not ENABLED:
        return post

    @functools.wraps(post)
    def wrapper(
        transport: S, deadline: Any, message: dict[str, Any], /, *args: P.args, **kwargs: P.kwargs
    ) -> R:
        with _request_span(transport, message, kwargs) as (sent, finish):
            reply = post(transport, deadline, sent, *args, **kwargs)
            finish(reply)
            return reply

    return wrapper


@contextmanager
def _request_span(
    transport: Any, message: dict[str, Any], options: Mapping[str, Any]
) -> Iterator[tuple[dict[str, Any], Callable[[Any], None]]]:
    started = time.perf_counter()
    try:
        span, common = _start_request(transport, message, options)
    except Exception:
        # A reporting boundary: a tracer that fails leaves the request untraced, never unsent.
        logger.warning("the span of an MCP request could not be started", exc_info=True)
        yield message, _ignored
        return
    error_type = ""
    try:
        with current(span):

            def finish(reply: Any) -> None:
                nonlocal error_type
                try:
                    error_type = _answered(span, reply, _described(transport))
                except Exception as exc:
                    noted(span, exc)

            yield _with_context(message), finish
    except McpTransportError as exc:
        error_type = str(exc.code) if exc.kind == "rpc_error" and exc.code is not None else exc.kind
        secrets = _described(transport)
        fail(span, error_type, "" if secrets is None else masked(str(exc), secrets))
        raise
    except Exception as exc:
        # Not the transport's: a bug or an interruption. Named by type; its text is not read.
        error_type = type(exc).__qualname__
        fail(span, error_type)
        raise
    finally:
        span.end()
        if error_type:
            common["error.type"] = error_type
        try:
            duration_histogram().record(time.perf_counter() - started, common)
        except Exception as exc:
            noted(span, exc)


def _ignored(reply: Any) -> None:
    return None


def _start_request(
    transport: Any, message: dict[str, Any], options: Mapping[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The request's CLIENT span, started, and the attributes its metric point shares."""
    method = message.get("method")
    method = clip(method) if isinstance(method, str) else "_OTHER"
    params = message.get("params")
    tool = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
    tool = clip(tool) if isinstance(tool, str) else None
    common: dict[str, Any] = {
        "mcp.method.name": method,
        "network.protocol.name": "http",
        "network.transport": "tcp",
        **server_attributes(transport.endpoint.url),
    }
    version = options.get("protocol_version")
    if isinstance(version, str):
        common["mcp.protocol.version"] = clip(version)
    if tool is not None:
        common["gen_ai.tool.name"] = tool
        common["gen_ai.operation.name"] = "execute_tool"
    attributes = dict(common)
    if "id" in message and message["id"] is not None:
        attributes["jsonrpc.request.id"] = clip(message["id"])
    session_id = options.get("session_id")
    if isinstance(session_id, str):
        attributes["mcp.session.id"] = session_digest(session_id)
    attributes["nr_llm.server"] = clip(transport.server)
    name = f"{method} {tool}" if tool is not None else method
    return tracer().start_span(name, kind=SpanKind.CLIENT, attributes=attributes), common


def _answered(span: Any, reply: Any, secrets: tuple[str, ...] | None) -> str:
    """Attributes from the answer; the error type when it is one (a JSON-RPC error, or a
    tools/call result with ``isError``), else "". ``secrets`` None: no server text recorded."""
    issued = getattr(reply, "session_id", None)
    if isinstance(issued, str):
        span.set_attribute("mcp.session.id", session_digest(issued))
    answer = getattr(reply, "answer", None)
    if not isinstance(answer, dict):
        return ""
    error = answer.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        if isinstance(code, int) and not isinstance(code, bool):
            span.set_attribute("rpc.response.status_code", str(code))
            error_type = str(code)
        else:
            error_type = "_OTHER"
        text = error.get("message")
        fail(span, error_type, masked(text, secrets) if isinstance(text, str) and secrets is not None else "")
        return error_type
    result = answer.get("result")
    if isinstance(result, dict):
        version = result.get("protocolVersion")
        if isinstance(version, str) and span.is_recording():
            # initialize: the revision the server chose is the session's from here on.
            span.set_attribute("mcp.protocol.version", clip(version))
        if result.get("isError") is True:
            fail(span, "tool_error")
            return "tool_error"
    return ""


def _with_context(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` carrying the current context in ``params._meta``; the message
    itself when there is none to carry (the caller's dicts are never changed)."""
    carrier: dict[str, str] = {}
    try:
        propagate.inject(carrier)
    except Exception:
        # A site's propagator that fails: the request goes as it would untraced.
        logger.warning("the trace context could not be injected into an MCP request", exc_info=True)
        return message
    fields = {
        clip(key, 64): clip(value, META_VALUE_CHARS)
        for key, value in list(carrier.items())[:META_KEYS]
        if isinstance(key, str) and isinstance(value, str)
    }
    if not fields:
        return message
    params = message.get("params", {})
    if not isinstance(params, dict):
        return message
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    for key, value in fields.items():
        meta.setdefault(key, value)
    return {**message, "params": {**params, "_meta": meta}}


def _described(transport: Any) -> tuple[str, ...] | None:
    """The credentials to mask in a span's status description, or None when the description
    carries no server text at all: a server's error message often quotes the arguments it was
    sent, so it is content, recorded only where the site's content capture allows it for this
    server (``Endpoint.capture_content``)."""
    return _secrets(transport) if getattr(transport.endpoint, "capture_content", False) else None


def _secrets(transport: Any) -> tuple[str, ...]:
    """The credentials this operation sends, to mask in a server's text: the header values
    and the bearer token alone."""
    found: list[str] = []
    for value in getattr(transport, "auth_headers", {}).values():
        if isinstance(value, str) and value:
            found.append(value)
            scheme, _, token = value.partition(" ")
            if scheme in ("Bearer", "DPoP") and token:
                found.append(token)
    return tuple(found)


__all__ = [
    "DURATION_BUCKETS",
    "DURATION_METRIC",
    "ENABLED",
    "traced_request",
]
