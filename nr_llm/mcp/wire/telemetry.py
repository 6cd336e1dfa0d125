"""OpenTelemetry for the client's HTTP legs, on ``opentelemetry-api`` only (the ``otel`` extra).

The shared vocabulary of the client's spans (the tracer, ``clip``, ``fail``, ``masked``,
``current``) and the OAuth legs' CLIENT spans (``traced_oauth_leg``, named by the HTTP method).
The spans of JSON-RPC messages are the protocol's (protocol/telemetry.py). The conventions
followed and the attribute table: docs/telemetry.md.

Without the API installed the decorators hand back the function they were given: nothing is
imported and nothing costs. With the API and no SDK, the API's no-op tracer and meter run.

No attribute holds a secret: no URL query, no header, no argument or result, server text
clipped and with this operation's credentials masked. Every value is bounded (``clip``),
whatever a server or caller sends.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import urlsplit

from .errors import McpTransportError
from .redaction import redact
from .text import clean

try:
    from opentelemetry import trace
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

#: Caps on what any attribute carries: a name, a server's message, a URL.
NAME_CHARS = 256
MESSAGE_CHARS = 512
URL_CHARS = 1024

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


def installed() -> bool:
    """A tracer provider is installed (an SDK's, or a site's own). Until one is, the API's proxy
    provider hands out spans that record nothing, and starting one, making it current and ending
    it is all a call would pay for it (a tenth of a millisecond or more at a call's start, when
    the process has just woken from waiting on the network)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


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


def fail(span: Any, error_type: str, message: str = "") -> None:
    span.set_attribute("error.type", clip(error_type))
    span.set_status(StatusCode.ERROR, clip(message, MESSAGE_CHARS) or None)


def noted(span: Any, exc: Exception) -> None:
    """A reporting boundary: telemetry that fails is noted on its span (by the error's type),
    never raised into the operation it observes."""
    span.set_attribute("nr_llm.telemetry.error", type(exc).__qualname__)


def current(span: Any) -> Any:
    """``span`` as the current span; its end, status and exceptions are the caller's to set."""
    return trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


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
    "ENABLED",
    "SCOPE",
    "clip",
    "traced_oauth_leg",
]
