"""OpenTelemetry for the MCP client, on ``opentelemetry-api`` only (the ``otel`` extra).

Follows the OpenTelemetry semantic conventions for MCP, semantic-conventions-genai v0.1.0
(``docs/gen-ai/mcp.md``, status Development; docs/telemetry.md has the attribute table):

- each JSON-RPC message the client sends is a CLIENT span ``{mcp.method.name} {target}``
  (``traced_request``, around ``Transport.post``: the one place every message leaves);
- the context of that span goes to the server in the message's ``params._meta``
  (``traceparent``, ``tracestate``: the configured propagators), so a server that traces
  makes its span a child of ours;
- its duration goes to the ``mcp.client.operation.duration`` histogram;
- every OAuth leg is a CLIENT span too (``traced_oauth_leg``), named by its HTTP method.

Without the API installed the decorators hand back the function they were given: nothing is
imported and nothing costs. With the API and no SDK, the API's no-op tracer and meter run.

No attribute holds a secret: no URL query, no header, no argument or result, the session id
only as a digest, server text (an error's message) clipped and with this operation's
credentials masked. Every value is bounded (``clip``), whatever a server or caller sends.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import urlsplit

from .errors import McpTransportError
from .redaction import redact
from .text import clean

try:
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.trace import SpanKind, StatusCode
except ImportError:  # the optional extra is not installed: every decorator is the identity
    ENABLED = False
else:
    ENABLED = True

logger = logging.getLogger("nr_llm.mcp")

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")

#: The instrumentation scope: one name for the package's tracer and meter.
SCOPE = "nr_llm"
DURATION_METRIC = "mcp.client.operation.duration"
#: The convention's ExplicitBucketBoundaries for the duration histogram (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)

#: Caps on what any attribute carries: a name, a server's message, a URL.
NAME_CHARS = 256
MESSAGE_CHARS = 512
URL_CHARS = 1024
#: What the client lets a propagator put into ``params._meta``: W3C ``tracestate`` is at most
#: 512 characters; a misbehaving propagator does not get to grow every request.
META_KEYS = 8
META_VALUE_CHARS = 1024

_DEFAULT_PORTS = {"http": 80, "https": 443}
_providers: dict[str, tuple[object, Any]] = {}


def clip(value: object, limit: int = NAME_CHARS) -> str:
    """Text an attribute may carry: control characters out, at most ``limit`` characters. A
    10 MB string costs one slice, not a copy of it."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit and text.isprintable():
        return text  # the common case, at C speed: nothing for clean() to strip
    return clean(text[: limit + 1], limit)


def masked(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret (and a clipped start of one) masked; before ``clip``, which
    would fold the spaces a secret may hold."""
    for secret in secrets:
        text = redact(text, secret)
    return text


def tracer() -> Any:
    """The package's tracer from the provider installed now (never cached past a change of
    provider: a site may install its SDK after this module was imported)."""
    provider = trace.get_tracer_provider()
    cached = _providers.get("tracer")
    if cached is None or cached[0] is not provider:
        cached = (provider, provider.get_tracer(SCOPE))
        _providers["tracer"] = cached
    return cached[1]


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


def server_attributes(url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a URL; nothing for one that does not parse
    (the host gate says why, naming no part of it)."""
    return dict(_server_attributes(url[: URL_CHARS * 2]))


@functools.lru_cache(maxsize=256)
def _server_attributes(url: str) -> tuple[tuple[str, Any], ...]:
    # Cached: every request of every operation parses the same few server URLs.
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return ()
    if not host:
        return ()
    found: tuple[tuple[str, Any], ...] = (("server.address", clip(host)),)
    return found if port is None else (*found, ("server.port", port))


def session_digest(session_id: str) -> str:
    """What ``mcp.session.id`` carries: a digest, never the id. A session id lets whoever holds
    it speak in the session; the digest still ties the spans of one session together."""
    return "sha256:" + hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]


def fail(span: Any, error_type: str, message: str = "") -> None:
    span.set_attribute("error.type", clip(error_type))
    span.set_status(StatusCode.ERROR, clip(message, MESSAGE_CHARS) or None)


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
                    error_type = _answered(span, reply, _secrets(transport))
                except Exception as exc:
                    noted(span, exc)

            yield _with_context(message), finish
    except McpTransportError as exc:
        error_type = str(exc.code) if exc.kind == "rpc_error" and exc.code is not None else exc.kind
        fail(span, error_type, masked(str(exc), _secrets(transport)))
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


def noted(span: Any, exc: Exception) -> None:
    """A reporting boundary: telemetry that fails is noted on its span (by the error's type),
    never raised into the operation it observes."""
    span.set_attribute("nr_llm.telemetry.error", type(exc).__qualname__)


def current(span: Any) -> Any:
    """``span`` as the current span; its end, status and exceptions are the caller's to set."""
    return trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def _answered(span: Any, reply: Any, secrets: tuple[str, ...]) -> str:
    """Attributes from the answer; the error type when it is one (a JSON-RPC error, or a
    tools/call result with ``isError``), else ""."""
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
        fail(span, error_type, masked(text, secrets) if isinstance(text, str) else "")
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


def _secrets(transport: Any) -> tuple[str, ...]:
    """The credentials this operation sends, to mask in a server's text: the header values
    and the bearer token alone."""
    found: list[str] = []
    for value in getattr(transport, "auth_headers", {}).values():
        if isinstance(value, str) and value:
            found.append(value)
            if value.startswith("Bearer "):
                found.append(value[len("Bearer ") :])
    return tuple(found)


def traced_oauth_leg(
    leg: Callable[Concatenate[S, str, str, str, P], R],
) -> Callable[Concatenate[S, str, str, str, P], R]:
    """Wrap ``OAuthLegs._leg(method, url, what, ...)``: an HTTP CLIENT span named by the method,
    the URL without its query (a client id or a code may travel there), no header, no body."""
    if not ENABLED:
        return leg

    @functools.wraps(leg)
    def wrapper(legs: S, method: str, url: str, what: str, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            span = _start_oauth_leg(getattr(legs, "server", ""), method, url, what)
        except Exception:
            # A reporting boundary: a tracer that fails leaves the leg untraced, never unsent.
            logger.warning("the span of an OAuth leg could not be started", exc_info=True)
            return leg(legs, method, url, what, *args, **kwargs)
        try:
            with current(span):
                answer = leg(legs, method, url, what, *args, **kwargs)
        except McpTransportError as exc:
            # The message names the server and the endpoint's role, never the URL or a secret.
            fail(span, exc.kind, str(exc))
            raise
        except Exception as exc:
            fail(span, type(exc).__qualname__)
            raise
        else:
            status = getattr(answer, "status", None)
            if isinstance(status, int):
                span.set_attribute("http.response.status_code", status)
                if status >= 400:
                    fail(span, str(status))
            return answer
        finally:
            span.end()

    return wrapper


def _start_oauth_leg(server: object, method: str, url: str, what: str) -> Any:
    attributes: dict[str, Any] = {
        "http.request.method": clip(method, 16),
        "nr_llm.oauth.endpoint": clip(what),
        "nr_llm.server": clip(server),
        **server_attributes(url),
    }
    bare = _without_query(url)
    if bare:
        attributes["url.full"] = bare
    return tracer().start_span(clip(method, 16), kind=SpanKind.CLIENT, attributes=attributes)


def _without_query(url: object) -> str:
    """scheme://host[:port]/path: no user-info, query or fragment; "" when it does not parse."""
    if not isinstance(url, str):
        return ""
    try:
        parts = urlsplit(url[: URL_CHARS * 2])
        host = parts.hostname
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not host:
        return ""
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    return clip(f"{parts.scheme}://{netloc}{parts.path}", URL_CHARS)


__all__ = [
    "DURATION_BUCKETS",
    "DURATION_METRIC",
    "ENABLED",
    "SCOPE",
    "clip",
    "traced_oauth_leg",
    "traced_request",
]
