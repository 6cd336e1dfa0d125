"""``RequestCompletionMiddleware``: a classified disconnect completes as 499, nothing else.

Place it LAST in ``MIDDLEWARE``. Django converts exceptions layer by layer, and the
first code to see an exception from the view or from rendering is the
``process_exception`` hook of the innermost middleware (hooks run innermost first);
returning the 499 there precedes every other hook, ``got_request_exception``, the 500
handler, the ``django.request`` error record and the admin email. Exceptions raised by
``process_view`` hooks (another middleware reading the body) are reached by calling
Django's resolver-and-view step directly instead of through the innermost converter;
anything not classified is converted here exactly as that converter would have done
(``response_for_exception``: signal, 500 handler, error record), so every other
exception is handled as before and its request still completes through ``_close``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

from .body import BodyRejected
from .classify import is_client_disconnect
from .completion import COMPLETION_KEY, Completion
from .signal import ClientDisconnected, Phase, signal_for, wrapper_state
from .status import CLIENT_CLOSED_REASON, CLIENT_CLOSED_REQUEST

logger = logging.getLogger(__name__)

GetResponse = Callable[[HttpRequest], Any]

# How long a request must have run before the middleware asks the client socket whether
# the client is still there (see _close).
PROBE_AFTER_NS = 1_000_000


def client_closed_response() -> HttpResponse:
    response = HttpResponse(status=CLIENT_CLOSED_REQUEST, reason=CLIENT_CLOSED_REASON)
    _mark_logged(response)
    return response


def _mark_logged(response: HttpResponseBase) -> None:
    # django.utils.log.log_response skips a response carrying this flag; without it
    # BaseHandler.get_response would log every 499 as a django.request WARNING.
    response._has_been_logged = True  # type: ignore[attr-defined]


def _unconverted(get_response: GetResponse) -> GetResponse:
    """Django's view step without the innermost converter, when that is what we were given.

    ``convert_exception_to_response`` keeps the wrapped callable as ``__wrapped__``
    (functools.wraps). Only the handler's own ``_get_response`` is unwrapped, and only
    when its sync/async mode matches; otherwise the converter stays in place.
    """
    inner = getattr(get_response, "__wrapped__", None)
    if inner is None or getattr(inner, "__name__", None) not in ("_get_response", "_get_response_async"):
        return get_response
    if iscoroutinefunction(inner) != iscoroutinefunction(get_response):
        return get_response
    unwrapped: GetResponse = inner
    return unwrapped


class RequestCompletionMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = _unconverted(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        # Every request of the site comes through here, and in CPython a function call is
        # a sizeable share of what this adds to a trivial one: the common case (the
        # wrapper's completion; a client not known to have left; a view quicker than the
        # liveness threshold) is handled inline, everything else by _open/_close.
        completion = request.META.get(COMPLETION_KEY)
        if type(completion) is Completion:
            completion.request = request
            owned = False
        else:
            completion, owned = _open(request)
        try:
            response = self.get_response(request)
        except Exception as exc:
            response = self.process_exception(request, exc) or response_for_exception(request, exc)
        if (
            not owned
            and completion._reason is None
            and response.status_code != CLIENT_CLOSED_REQUEST
            and time.monotonic_ns() - completion._started_ns < PROBE_AFTER_NS
        ):
            return response
        return _close(request, completion, owned, response)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        completion, owned = _open(request)
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        try:
            response = await get_response(request)
        except Exception as exc:
            handled = self.process_exception(request, exc)
            # As Django's async converter does: the 500 handler may touch the database.
            convert = sync_to_async(response_for_exception, thread_sensitive=False)
            response = handled or await convert(request, exc)
        except asyncio.CancelledError:
            # Django cancels the view's task when the client disconnects. Cancellation
            # must propagate; the ASGI wrapper, when there is one, records the completion.
            # Without one nobody else will: record it here, as the disconnect it is.
            if owned:
                completion.abort(
                    ClientDisconnected("the request was cancelled (the client left)"), Phase.HANDLER
                )
                completion.finish()
            raise
        return _close(request, completion, owned, response)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponseBase | None:
        if is_client_disconnect(exception, signal_for(request)):
            return client_closed_response()
        if isinstance(exception, BodyRejected):
            return JsonResponse({"error": str(exception)}, status=exception.status_code)
        completion = _completion_of(request)
        if completion is not None and completion.error_type is None:
            completion.error_type = type(exception).__qualname__
        return None


def _completion_of(request: HttpRequest) -> Completion | None:
    found = wrapper_state(request, COMPLETION_KEY)
    return found if isinstance(found, Completion) else None


def _open(request: HttpRequest) -> tuple[Completion, bool]:
    """The wrapper's completion, or one this middleware owns when no wrapper runs."""
    completion = _completion_of(request)
    if completion is not None:
        completion.request = request
        return completion, False
    completion = Completion(
        method=request.method or "",
        path=request.path,
        # META directly: request.headers builds a mapping of every header per request.
        request_id_header=request.META.get("HTTP_X_REQUEST_ID"),
        traceparent=request.META.get("HTTP_TRACEPARENT"),
    )
    completion.request = request
    request.META[COMPLETION_KEY] = completion
    return completion, True


def _close(
    request: HttpRequest, completion: Completion, owned: bool, response: HttpResponseBase
) -> HttpResponseBase:
    # Ask the transport once more: a client that left while the view ran must not be
    # reported as served (nginx's 499). A 5xx stays: it is a server error regardless.
    # Only after a view that took a while: the question is a system call, which after
    # PROBE_AFTER_NS costs well under 1 % of the request, while on a sub-millisecond
    # request it is a few percent for a client that would have had to leave within that
    # millisecond (and one leaving a moment later is missed by any check).
    gone = completion.aborted or (completion.age_ns() >= PROBE_AFTER_NS and completion.check())
    if gone and completion.phase is not Phase.RESPONSE and response.status_code < 500:
        response.close()
        response = client_closed_response()
    elif response.status_code == CLIENT_CLOSED_REQUEST:
        _mark_logged(response)
    if owned:
        # Without a wrapper nobody sees the bytes go out; report what Django produced.
        completion.status_code = response.status_code
        if not response.streaming:
            completion.bytes_sent = len(response.content)  # type: ignore[attr-defined]
        completion.finish()
    return response
