"""Demo endpoints to watch request completion by hand (docs/observability.md)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from nr_llm.observability import read_json, signal_for

logger = logging.getLogger("project.demo")

ECHO_MAX_BYTES = 64 * 1024
SLOW_MAX_SECONDS = 60.0
POLL_SECONDS = 0.05
FAVICON = (Path(__file__).parent / "favicon.ico").read_bytes()


def slow(request: HttpRequest) -> HttpResponse:
    """Wait ``?seconds=N`` (at most 60), giving up as soon as the client has gone."""
    try:
        seconds = min(float(request.GET.get("seconds", "1")), SLOW_MAX_SECONDS)
    except ValueError:
        return HttpResponseBadRequest("seconds must be a number\n")
    signal = signal_for(request)
    # A server-side barrier tests (and people) can wait for: the view is running.
    logger.info("slow view admitted %s", request.headers.get("X-Request-ID", "-"))
    deadline = time.monotonic() + max(seconds, 0.0)
    while (left := deadline - time.monotonic()) > 0:
        if signal is not None:
            # Raises the canonical reason, which the middleware completes as 499.
            signal.raise_if_aborted()
        time.sleep(min(POLL_SECONDS, left))
    return HttpResponse(f"waited {seconds:g} s\n", content_type="text/plain")


@csrf_exempt
@require_POST
def echo(request: HttpRequest) -> JsonResponse:
    """Return the posted JSON document (413 over 64 KiB, 400 when not JSON)."""
    return JsonResponse({"echo": read_json(request, max_bytes=ECHO_MAX_BYTES)})


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """The demo's icon (32 px, PNG in an ICO): a browser stops asking once it has one."""
    return HttpResponse(FAVICON, content_type="image/x-icon")
