"""The ASGI wrapper around Django's real ASGIHandler, driven in-process.

Covers the async path: Django cancels the view's task when ``http.disconnect`` arrives,
and the CancelledError that crosses the middleware completes as a 499.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from django.core.handlers.asgi import ASGIHandler

from nr_llm.observability.asgi import DisconnectAwareASGI

from . import urls


def scope(method: str, path: str, length: int = 0) -> dict[str, Any]:
    headers = [(b"host", b"testserver"), (b"x-request-id", b"rid-asgi")]
    if length:
        headers += [(b"content-length", str(length).encode()), (b"content-type", b"application/json")]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


def run(
    app_scope: dict[str, Any],
    messages: list[dict[str, Any]],
    *,
    disconnect_after: str | None = None,
    wrapped: bool = True,
) -> list[dict[str, Any]]:
    """Serve one request: ``messages`` are received in order, then ``http.disconnect`` once
    ``disconnect_after`` ("start": the response started; "end": it completed; "view": the
    view began (up to 10 s); None: 0.2 s later) has happened.
    Returns what the application sent."""
    sent: list[Mapping[str, Any]] = []

    async def main() -> None:
        started, ended, disconnected = asyncio.Event(), asyncio.Event(), asyncio.Event()
        queue = list(messages)

        async def receive() -> dict[str, Any]:
            if queue:
                return queue.pop(0)
            if disconnect_after == "start":
                await started.wait()
            elif disconnect_after == "end":
                await ended.wait()
            elif disconnect_after == "view":
                # Wait for the view itself, not a fixed delay: a cold or loaded machine can
                # take longer than any guess to reach it.
                for _ in range(1000):
                    if urls.ENTERED_VIEWS:
                        break
                    await asyncio.sleep(0.01)
            else:
                await asyncio.sleep(0.2)
            disconnected.set()
            return {"type": "http.disconnect"}

        async def send(message: Mapping[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body":
                started.set()
                if not message.get("more_body", False):
                    ended.set()
                elif disconnect_after == "start":
                    await disconnected.wait()  # the client leaves mid-response

        app = DisconnectAwareASGI(ASGIHandler()) if wrapped else ASGIHandler()
        await asyncio.wait_for(app(app_scope, receive, send), timeout=20)

    asyncio.run(main())
    return sent  # type: ignore[return-value]


def test_disconnect_mid_upload_is_a_499_in_phase_request_body(site, logs, signals_sent):
    """Django returns silently when the client leaves during the body; the wrapper records it."""
    sent = run(
        scope("POST", "/reason/", length=1000),
        [{"type": "http.request", "body": b'{"a": "', "more_body": True}],
    )
    assert sent == []
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("INFO", 499)
    assert access.nr_llm_access["phase"] == "request_body"
    assert access.nr_llm_access["request_id"] == "rid-asgi"
    assert logs.named("django") == [] and signals_sent == []


def test_disconnect_during_an_async_view_cancels_it_and_completes_as_499(site, logs, signals_sent):
    """The async view is cancelled (CancelledError crosses the middleware) and the request
    completes once as 499 in phase handler, with its route."""
    urls.CANCELLED_VIEWS.clear()
    urls.ENTERED_VIEWS.clear()
    sent = run(
        scope("GET", "/waits-forever/"), [{"type": "http.request", "body": b""}], disconnect_after="view"
    )
    assert sent == []
    assert urls.CANCELLED_VIEWS == ["/waits-forever/"]
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("INFO", 499)
    assert access.nr_llm_access["phase"] == "handler"
    assert logs.named("django") == [] and signals_sent == []


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapper", "middleware-only"])
def test_a_cancelled_async_view_is_one_cancellation_event_with_its_route(site, logs, settings, wrapped):
    """Opted in, the cancelled view is exactly one cancellation row naming its route. Without
    the ASGI wrapper the middleware records it itself (Django cancelling the view's task is
    its answer to http.disconnect), so a site that skipped the wrapper still sees it."""
    settings.NR_LLM_REQUEST_EVENTS = {"include_cancelled": True}
    urls.CANCELLED_VIEWS.clear()
    urls.ENTERED_VIEWS.clear()
    run(
        scope("GET", "/waits-forever/"),
        [{"type": "http.request", "body": b""}],
        disconnect_after="view",
        wrapped=wrapped,
    )
    assert urls.CANCELLED_VIEWS == ["/waits-forever/"]
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"], access.nr_llm_access["phase"]) == (
        "INFO",
        499,
        "handler",
    )
    (event,) = [r.nr_llm_event.as_dict() for r in logs.named("nr_llm.requests")]
    assert (event["outcome"], event["status_code"], event["ok"], event["route"]) == (
        "cancelled",
        499,
        False,
        "waits-forever/",
    )


def test_disconnect_after_the_response_started_keeps_the_status(site, logs):
    """A disconnect between the first and the last body message keeps the sent 200, phase response."""
    run(scope("GET", "/streams-async/"), [{"type": "http.request", "body": b""}], disconnect_after="start")
    (access,) = logs.named("nr_llm.access")
    assert access.levelname == "INFO"
    assert (access.nr_llm_access["status"], access.nr_llm_access["phase"]) == (200, "response")


def test_the_disconnect_after_a_completed_response_is_ignored(site, logs, settings):
    """uvicorn's http.disconnect after the whole response is not a disconnect: 200, no phase."""
    settings.NR_LLM_REQUEST_EVENTS = {"include_cancelled": True}
    sent = run(scope("GET", "/ok/"), [{"type": "http.request", "body": b""}], disconnect_after="end")
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    (access,) = logs.named("nr_llm.access")
    assert access.nr_llm_access["status"] == 200
    assert "phase" not in access.nr_llm_access
    (event,) = logs.named("nr_llm.requests")
    assert "outcome" not in event.nr_llm_event.as_dict()
