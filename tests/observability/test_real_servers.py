"""Client disconnects against real servers: gunicorn sync and gthread, uvicorn.

Each scenario breaks a connection on purpose after a server-side barrier, then reads
what the server logged, mailed and emitted. The negative controls run the same harness
without the wrappers and middleware and must see today's false 500 and silence.
"""

from __future__ import annotations

import time

import pytest

from .harness import (
    Server,
    access_for,
    admitted,
    assert_clean_499,
    close,
    connect,
    event_for,
    get,
    in_slow_view,
    mentions,
    new_rid,
    request_head,
    serve,
)

pytestmark = pytest.mark.e2e

KINDS = ["gunicorn-sync", "gunicorn-gthread", "uvicorn"]
PARTIAL_JSON = b'{"text": "' + b"x" * 100
CSRF_COOKIE = "csrftoken=" + "a" * 32


@pytest.fixture(scope="module", params=KINDS)
def opted_in(request, tmp_path_factory):
    """A server per kind with cancellation events opted in."""
    with serve(request.param, tmp_path_factory.mktemp(request.param), include_cancelled=True) as server:
        yield server


@pytest.fixture(scope="module", params=KINDS)
def default_events(request, tmp_path_factory):
    """A server per kind with the default NR_LLM_REQUEST_EVENTS (no cancellation rows)."""
    with serve(request.param, tmp_path_factory.mktemp(request.param)) as server:
        yield server


def break_upload(server: Server, how: str, *, path="/demo/echo/", content_type="application/json", cookie=""):
    """Send headers and part of a body, wait until the application has the request, close."""
    rid = new_rid()
    sock = connect(server)
    head = request_head("POST", path, rid, length=1000, content_type=content_type, cookie=cookie)
    sock.sendall(head + PARTIAL_JSON)
    server.wait_for(admitted(rid), "admission")
    close(sock, how)
    return rid


def leave_slow_view(server: Server, how: str, seconds: float = 10) -> str:
    """Start the slow view, wait until it runs, close the connection."""
    rid = new_rid()
    sock = connect(server)
    sock.sendall(request_head("GET", f"/demo/slow/?seconds={seconds:g}", rid))
    server.wait_for(in_slow_view(rid), "slow view barrier")
    close(sock, how)
    return rid


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_mid_upload_close_is_one_499_and_one_cancelled_event(opted_in, how):
    """A client that closes (FIN) or resets (RST) mid-upload completes as 499 at INFO, phase
    request_body, with no error record, email or signal, and exactly one cancelled event."""
    rid = break_upload(opted_in, how)
    assert_clean_499(opted_in, rid, "request_body")
    (event,) = [r["event"] for r in opted_in.records() if event_for(rid)(r)]
    assert event["outcome"] == "cancelled"
    assert (event["ok"], event["status_code"]) == (False, 499)
    assert "error_type" not in event


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_close_during_slow_view_is_one_499_and_the_view_stops(opted_in, how):
    """Closing while the slow view runs completes as 499 phase handler, well before the view's
    10 seconds are up, with exactly one cancelled event."""
    rid = leave_slow_view(opted_in, how)
    access = assert_clean_499(opted_in, rid, "handler")
    assert access["access"]["duration_ms"] < 8000  # the server's own measure
    events = [r["event"] for r in opted_in.records() if event_for(rid)(r)]
    rows = [(e["outcome"], e["status_code"], e["route"]) for e in events]
    assert rows == [("cancelled", 499, "demo/slow/")]


@pytest.mark.parametrize("how", ["fin", "rst"])
def test_csrf_reset_mid_upload_is_499_without_the_csrf_warning(opted_in, how):
    """A form POST with a CSRF cookie that breaks mid-upload is a 499; the CSRF 403 warning
    "CSRF token missing" does not reach the logs."""
    rid = break_upload(
        opted_in,
        how,
        path="/demo/slow/",
        content_type="application/x-www-form-urlencoded",
        cookie=CSRF_COOKIE,
    )
    assert_clean_499(opted_in, rid, "request_body")


def test_cancellations_emit_no_event_by_default(default_events):
    """With the default settings a cancelled completion has its access record but no event,
    while an ordinary request still has one."""
    rids = [break_upload(default_events, "rst"), leave_slow_view(default_events, "fin")]
    for rid, phase in zip(rids, ["request_body", "handler"], strict=True):
        assert_clean_499(default_events, rid, phase)
    assert [r for r in default_events.records() if any(event_for(rid)(r) for rid in rids)] == []
    assert any(r["logger"] == "nr_llm.requests" for r in default_events.records())


def test_negative_control_gunicorn_without_wrappers_reports_a_false_500(tmp_path):
    """Without the wrapper and middleware, a reset mid-upload under gunicorn is today's false 500:
    got_request_exception, a django.request ERROR and an admin email; a FIN hands the view a
    truncated body."""
    with serve("gunicorn-sync", tmp_path, bare=True) as server:
        reset = break_upload(server, "rst")
        server.wait_for(lambda r: r["logger"] == "django.request" and r["level"] == "ERROR", "the 500")
        assert any(r["message"].startswith("got_request_exception") for r in server.records())
        assert len(server.emails()) == 1
        closed = break_upload(server, "fin")
        (bad,) = server.wait_for(lambda r: r.get("status_code") == 400, "the truncated body")
        assert "not valid JSON" in bad["message"]
        assert [r for r in server.records() if access_for(reset)(r) or access_for(closed)(r)] == []


def test_negative_control_uvicorn_without_wrappers_is_silent(tmp_path):
    """Without the wrapper and middleware, a client leaving the slow view under uvicorn leaves
    no trace: after the barrier, nothing at all is logged about the request."""
    with serve("uvicorn", tmp_path, bare=True) as server:
        rid = leave_slow_view(server, "fin", seconds=0.5)
        # The bare view sleeps its 0.5 s in a thread nobody stops; give it time to finish.
        time.sleep(1.5)
        later = new_rid()
        assert get(server, "/demo/slow/?seconds=0", later).startswith(b"HTTP/1.1 200")
        server.wait_for(in_slow_view(later), "a later request")
        about_it = [r["message"] for r in server.records() if mentions(rid)(r)]
        assert about_it == [f"admitted {rid}", f"slow view admitted {rid}"]
        assert [r for r in server.records() if r["level"] != "INFO"] == []
