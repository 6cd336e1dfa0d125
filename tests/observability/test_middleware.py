"""A classified disconnect completes as 499 wherever in Django's chain it was raised."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from django.core import mail
from django.core.handlers.asgi import ASGIHandler
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client, override_settings

from tests.settings import MIDDLEWARE

from . import urls
from .drivers import ResettingStream, wrapped_wsgi, wsgi_call
from .test_asgi import scope

PARTIAL = b'{"text": "' + b"x" * 50
BODY_READER = "tests.observability.urls.BodyReadingMiddleware"
HOOK_RECORDER = "tests.observability.urls.RecordingExceptionMiddleware"
COMPLETION = "nr_llm.observability.middleware.RequestCompletionMiddleware"


def assert_quiet_499(logs, signals_sent, status):
    assert status.startswith("499 ")
    assert signals_sent == []
    assert mail.outbox == []
    assert logs.named("django") == []
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("INFO", 499)


@pytest.mark.parametrize("path", ["/reason/", "/wrapped-reason/", "/render-reason/"])
@pytest.mark.parametrize("stream", ["eof", "reset"])
def test_disconnect_from_view_or_rendering_is_a_quiet_499(site, logs, signals_sent, path, stream):
    """A mid-upload EOF or reset raised in the view, wrapped by the view (``from``), or raised
    while rendering completes as 499: no signal, no email, no django.* record."""
    body_stream = ResettingStream(PARTIAL) if stream == "reset" else None
    status, _ = wsgi_call(wrapped_wsgi(), "POST", path, body=PARTIAL, length=1000, stream=body_stream)
    assert_quiet_499(logs, signals_sent, status)
    (access,) = logs.named("nr_llm.access")
    assert access.nr_llm_access["phase"] == "request_body"


def test_disconnect_in_another_middlewares_process_view_is_a_quiet_499(site, logs, signals_sent):
    """Another middleware reading the body in process_view (as CSRF does) hits the disconnect;
    the request still completes as a quiet 499."""
    site.MIDDLEWARE = [*MIDDLEWARE[:-1], BODY_READER, MIDDLEWARE[-1]]
    status, _ = wsgi_call(wrapped_wsgi(), "POST", "/process-view/", body=PARTIAL, length=1000)
    assert_quiet_499(logs, signals_sent, status)


@pytest.mark.parametrize(
    ("path", "hook_calls"), [("/wrapped-reason/", []), ("/unrelated-reset/", ["ConnectionResetError"])]
)
def test_no_other_process_exception_hook_sees_a_disconnect(site, path, hook_calls):
    """Another middleware's process_exception hook is skipped for a disconnect, and still
    called for an unrelated error (so the test can fail)."""
    site.MIDDLEWARE = [*MIDDLEWARE[:-1], HOOK_RECORDER, MIDDLEWARE[-1]]
    urls.HOOK_CALLS.clear()
    wsgi_call(wrapped_wsgi(), "POST", path, body=PARTIAL, length=1000)
    assert hook_calls == urls.HOOK_CALLS


def test_csrf_403_after_a_disconnect_is_a_499_without_the_warning(site, logs, signals_sent):
    """CSRF reading a truncated form body answers 403 "CSRF token missing"; with the signal
    aborted that warning stays out of the logs and the completion is a 499."""
    status, _ = wsgi_call(
        wrapped_wsgi(),
        "POST",
        "/form/",
        body=b"field=" + b"x" * 20,
        length=500,
        content_type="application/x-www-form-urlencoded",
        extra={"HTTP_COOKIE": "csrftoken=" + "a" * 32},
    )
    assert_quiet_499(logs, signals_sent, status)


def test_csrf_403_without_a_disconnect_is_still_logged(site, logs):
    """The CSRF filter only hides warnings about requests whose client left."""
    body = b"field=value"
    status, _ = wsgi_call(
        wrapped_wsgi(),
        "POST",
        "/form/",
        body=body,
        content_type="application/x-www-form-urlencoded",
        extra={"HTTP_COOKIE": "csrftoken=" + "a" * 32},
    )
    assert status.startswith("403 ")
    assert [r.getMessage() for r in logs.named("django.security.csrf")] == [
        "Forbidden (CSRF token missing.): /form/"
    ]


def test_unrelated_connection_reset_stays_a_server_error(site, logs, signals_sent):
    """With the signal aborted, a ConnectionResetError of the same errno and message from an
    outbound call is still a 500 with its signal, error record and email."""
    status, _ = wsgi_call(wrapped_wsgi(), "POST", "/unrelated-reset/", body=PARTIAL, length=1000)
    assert status.startswith("500 ")
    assert len(signals_sent) == 1
    assert len(mail.outbox) == 1
    assert [r.levelname for r in logs.named("django.request")] == ["ERROR"]
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("ERROR", 500)


def test_abort_error_while_the_signal_is_not_set_stays_a_server_error(site, logs, signals_sent):
    """ClientDisconnected raised by application code while the client is still there is a 500."""
    status, _ = wsgi_call(wrapped_wsgi(), "GET", "/abort-error-while-active/")
    assert status.startswith("500 ")
    assert len(signals_sent) == 1
    assert [r.levelname for r in logs.named("django.request")] == ["ERROR"]


def test_a_499_the_site_returns_itself_is_info_and_not_a_django_warning(site, logs):
    """A view's own 499 is logged once, at INFO, by the access record only."""
    status, _ = wsgi_call(wrapped_wsgi(), "GET", "/site-499/")
    assert status.startswith("499 ")
    assert logs.named("django") == []
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("INFO", 499)


def test_without_a_wrapper_the_middleware_still_completes_each_request_once(site, logs):
    """Under the test client (no wrapper) the middleware reports the completion itself."""
    response = Client().get("/ok/", HTTP_X_REQUEST_ID="rid-1")
    assert response.status_code == 200
    (access,) = logs.named("nr_llm.access")
    assert access.nr_llm_access == {
        "method": "GET",
        "path": "/ok/",
        "status": 200,
        "duration_ms": access.nr_llm_access["duration_ms"],
        "bytes": 2,
        "request_id": "rid-1",
    }


def test_check_fails_when_the_middleware_is_not_last():
    """Anywhere but last, another middleware's hook would see the disconnect first: E030."""
    misplaced = [COMPLETION, *[entry for entry in MIDDLEWARE if entry != COMPLETION]]
    with override_settings(MIDDLEWARE=misplaced), pytest.raises(SystemCheckError) as info:
        call_command("check", "--tag", "nr_llm")
    assert "nr_llm.E030" in str(info.value)


@pytest.mark.parametrize(
    ("path", "status", "level"),
    [("/abort-error-while-active/", 500, "ERROR"), ("/no-such-page/", 404, "WARNING")],
)
def test_without_a_wrapper_a_request_that_raises_still_completes_once(site, logs, path, status, level):
    """Without a wrapper, a request whose exception Django converts (500, or a 404 raised by
    the resolver) still gets its one access record and event from the middleware."""
    response = Client(raise_request_exception=False).get(path)
    assert response.status_code == status
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == (level, status)
    (event,) = logs.named("nr_llm.requests")
    assert (event.nr_llm_event.status_code, event.nr_llm_event.ok) == (status, False)


def test_without_a_wrapper_an_async_500_still_completes_once(site, logs, signals_sent):
    """The async middleware path converts an unclassified exception like Django's own
    converter (signal, error record, 500) and completes the request once."""
    sent: list[Mapping[str, Any]] = []

    messages: list[dict[str, Any]] = [{"type": "http.request", "body": b""}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(30)  # the client stays; Django cancels this listener when done
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        sent.append(message)

    app_scope = scope("GET", "/abort-error-while-active/")
    asyncio.run(asyncio.wait_for(ASGIHandler()(app_scope, receive, send), 20))
    assert sent[0]["status"] == 500
    assert len(signals_sent) == 1
    assert [r.levelname for r in logs.named("django.request")] == ["ERROR"]
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("ERROR", 500)
