"""A thin ASGI wrapper that gives each HTTP request a disconnect signal and one completion.

``application = DisconnectAwareASGI(get_asgi_application())`` in the site's asgi.py.

It watches ``receive()`` for ``http.disconnect`` before the response completed (the one
uvicorn sends after a completed response is not a disconnect) and finishes the
completion when Django's handler returns. Django answers an early disconnect by
returning silently (body not yet read) or by cancelling the view's task; the wrapper is
what turns both into a recorded 499.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .completion import COMPLETION_KEY, Completion
from .signal import SIGNAL_KEY, ClientDisconnected, Phase

Scope = dict[str, Any]
Message = Mapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _identity_headers(scope: Scope) -> tuple[str | None, str | None]:
    """X-Request-ID and traceparent, in one pass over the headers (the first of each)."""
    request_id = traceparent = None
    for key, value in scope.get("headers", ()):
        name = key.lower()
        if name == b"x-request-id" and request_id is None:
            request_id = bytes(value).decode("latin-1")
        elif name == b"traceparent" and traceparent is None:
            traceparent = bytes(value).decode("latin-1")
    return request_id, traceparent


class DisconnectAwareASGI:
    """Wrap an ASGI application (Django's handler) with the disconnect signal."""

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.application(scope, receive, send)
            return
        request_id, traceparent = _identity_headers(scope)
        completion = Completion(
            method=scope.get("method", ""),
            path=scope.get("root_path", "") + scope.get("path", ""),
            request_id_header=request_id,
            traceparent=traceparent,
        )
        signal = completion
        body_complete = False
        response_complete = False

        async def watched_receive() -> Message:
            nonlocal body_complete
            message = await receive()
            kind = message["type"]
            if kind == "http.request":
                body_complete = body_complete or not message.get("more_body", False)
            elif kind == "http.disconnect" and not response_complete:
                if not body_complete:
                    phase = Phase.REQUEST_BODY
                else:
                    phase = Phase.RESPONSE if signal.response_started else Phase.HANDLER
                signal.abort(ClientDisconnected("the client disconnected (http.disconnect)"), phase)
            return message

        async def recording_send(message: Message) -> None:
            nonlocal response_complete
            kind = message["type"]
            if kind == "http.response.start":
                completion.status_code = int(message["status"])
                signal.response_started = True
            elif kind == "http.response.body":
                completion.bytes_sent += len(message.get("body", b""))
                response_complete = not message.get("more_body", False)
            await send(message)

        # Copy, not mutate: the server owns its scope.
        # The completion is the request's signal: one object under both keys.
        scope = {**scope, SIGNAL_KEY: completion, COMPLETION_KEY: completion}
        try:
            await self.application(scope, watched_receive, recording_send)
        except Exception:
            if completion.status_code is None:
                completion.status_code = 500
            raise
        finally:
            completion.finish()
