"""Views that raise a disconnect from each place in Django's chain (in-process tests)."""

import asyncio
import contextlib
import errno
import io

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.template.response import SimpleTemplateResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from nr_llm.observability import ClientDisconnected, Phase, read_json, signal_for

CANCELLED_VIEWS: list[str] = []
# Views that have begun: a test disconnects only once its view runs, however slow the start.
ENTERED_VIEWS: list[str] = []


def reason(request):
    return HttpResponse(repr(read_json(request, max_bytes=10_000)))


def wrapped_reason(request):
    try:
        read_json(request, max_bytes=10_000)
    except ClientDisconnected as exc:
        raise RuntimeError("the upstream step failed") from exc
    return HttpResponse("unreachable")


def unrelated_reset(request):
    # Swallow the client's disconnect, then fail on an outbound call with the same
    # class, errno and message: only identity may classify.
    with contextlib.suppress(ClientDisconnected):
        read_json(request, max_bytes=10_000)
    raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


def abort_error_while_active(request):
    raise ClientDisconnected("raised by application code, the client is still here")


class _RenderReadsBody(SimpleTemplateResponse):
    def __init__(self, request):
        super().__init__(template="unused.html")
        self._request = request

    def render(self):
        read_json(self._request, max_bytes=10_000)
        return self


def render_reason(request):
    return _RenderReadsBody(request)


def ok(request):
    return HttpResponse("ok")


def site_499(request):
    return HttpResponse(status=499)


def process_view_target(request):
    return HttpResponse("the body-reading middleware ran first")


async def waits_forever(request):
    ENTERED_VIEWS.append(request.path)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        CANCELLED_VIEWS.append(request.path)
        raise
    return HttpResponse("not cancelled")


def streams(request):
    return StreamingHttpResponse(iter([b"first chunk ", b"second chunk"]))


async def _chunks():
    for chunk in (b"first chunk ", b"second chunk"):
        yield chunk


def streams_async(request):
    # Django warns about (and tests fail on) a sync iterator served over ASGI.
    return StreamingHttpResponse(_chunks())


def streams_until_the_client_leaves(request):
    """A long stream that checks the signal between chunks (the probe's verdict is simulated)."""
    signal = signal_for(request)

    def chunks():
        yield b"first chunk "
        assert signal is not None
        signal.abort(ClientDisconnected("the client closed the connection"), Phase.RESPONSE)
        signal.raise_if_aborted()
        yield b"never sent"

    return StreamingHttpResponse(chunks())


def file(request):
    return FileResponse(io.BytesIO(b"file body"))


def streams_then_reads_the_body(request):
    """A streaming response that reads the request body after its first chunk."""

    def chunks():
        yield b"first chunk "
        yield request.read()

    return StreamingHttpResponse(chunks())


urlpatterns = [
    # JSON endpoints are CSRF-exempt, as an API would be; /form/ keeps CSRF on.
    path("reason/", csrf_exempt(reason)),
    path("wrapped-reason/", csrf_exempt(wrapped_reason)),
    path("unrelated-reset/", csrf_exempt(unrelated_reset)),
    path("abort-error-while-active/", abort_error_while_active),
    path("render-reason/", csrf_exempt(render_reason)),
    path("ok/", ok),
    path("site-499/", site_499),
    path("process-view/", csrf_exempt(process_view_target)),
    path("waits-forever/", csrf_exempt(waits_forever)),
    path("streams/", streams),
    path("file/", file),
    path("streams-then-reads/", csrf_exempt(streams_then_reads_the_body)),
    path("streams-async/", streams_async),
    path("streams-until-gone/", streams_until_the_client_leaves),
    path("form/", ok),
]


class BodyReadingMiddleware:
    """Another middleware whose process_view reads the body (as CSRF does)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        if request.path == "/process-view/":
            request.body  # noqa: B018
        return None


HOOK_CALLS: list[str] = []


class RecordingExceptionMiddleware:
    """Another middleware's process_exception hook, which must not see a disconnect."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        HOOK_CALLS.append(type(exception).__name__)
        return None
