"""One completion per request: access record levels and the RequestEvent row shapes."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from nr_llm.observability import ClientDisconnected, Phase
from nr_llm.observability.completion import Completion, access_level
from nr_llm.observability.ids import request_id_from, trace_id_from

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def completion(status: int | None, *, aborted_in: Phase | None = None, **headers: str) -> Completion:
    done = Completion(
        method="GET",
        path="/x/",
        request_id_header=headers.get("rid"),
        traceparent=headers.get("traceparent"),
    )
    if aborted_in is not None:
        done.abort(ClientDisconnected("gone"), aborted_in)
    done.status_code = status
    done.route = "x/"
    return done


@pytest.mark.parametrize(
    ("status", "level"),
    [(101, logging.INFO), (200, logging.INFO), (302, logging.INFO), (499, logging.INFO),
     (403, logging.WARNING), (404, logging.WARNING), (500, logging.ERROR), (503, logging.ERROR)],
)  # fmt: skip
def test_access_levels(status, level):
    """INFO for 1xx-3xx and every 499, WARNING for other 4xx, ERROR for 5xx."""
    assert access_level(status) == level


def test_finish_reports_once(logs):
    """A second finish() is a no-op: one access record, one event."""
    done = completion(200)
    done.finish()
    done.finish()
    assert len(logs.named("nr_llm.access")) == 1
    assert len(logs.named("nr_llm.requests")) == 1


def test_success_and_failure_rows_have_no_outcome_key(logs):
    """Ordinary rows keep the legacy shape: no ``outcome``; a failure names its error type."""
    ok = completion(200, rid="rid-ok", traceparent=TRACEPARENT)
    failed = completion(500)
    failed.error_type = "ValueError"
    ok.finish()
    failed.finish()
    rows = [record.nr_llm_event.as_dict() for record in logs.named("nr_llm.requests")]
    assert [("outcome" in row, row["ok"], row["status_code"]) for row in rows] == [
        (False, True, 200),
        (False, False, 500),
    ]
    assert rows[0]["request_id"] == "rid-ok"
    assert rows[0]["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert "error_type" not in rows[0]
    assert rows[1]["error_type"] == "ValueError"


def test_a_cancelled_completion_emits_no_event_by_default(logs):
    """include_cancelled is False by default: the access record only."""
    completion(None, aborted_in=Phase.HANDLER).finish()
    assert [r.nr_llm_access["status"] for r in logs.named("nr_llm.access")] == [499]
    assert logs.named("nr_llm.requests") == []


def test_an_opted_in_cancellation_row(logs, settings):
    """Opted in: outcome="cancelled", ok=False, status 499 and no error fields."""
    settings.NR_LLM_REQUEST_EVENTS = {"include_cancelled": True}
    done = completion(None, aborted_in=Phase.REQUEST_BODY)
    done.error_type = "UnreadablePostError"
    done.finish()
    (record,) = logs.named("nr_llm.requests")
    row = record.nr_llm_event.as_dict()
    assert (row["outcome"], row["ok"], row["status_code"]) == ("cancelled", False, 499)
    assert "error_type" not in row
    assert set(row) == {
        "request_id", "trace_id", "method", "route", "status_code", "ok",
        "duration_ms", "started_at", "user_id", "outcome",
    }  # fmt: skip


def test_a_5xx_is_kept_even_when_the_client_left(logs):
    """An unclassified exception is a server error whatever the client did."""
    completion(500, aborted_in=Phase.HANDLER).finish()
    (access,) = logs.named("nr_llm.access")
    assert (access.levelname, access.nr_llm_access["status"]) == ("ERROR", 500)


@pytest.mark.parametrize("field", ["path", "method"])
def test_a_control_character_in_the_request_line_stays_on_one_line(logs, field):
    """The client-controlled path and method are escaped in the message."""
    done = completion(404)
    setattr(done, field, "/evil\n200 forged line")
    done.finish()
    (access,) = logs.named("nr_llm.access")
    assert "\n" not in access.getMessage()


@pytest.mark.parametrize("header", [None, "", "a b", "x" * 129, "line\nbreak"])
def test_an_unusable_request_id_is_replaced(header):
    """Only a plain token up to 128 characters is taken from X-Request-ID."""
    assert request_id_from(header) != header
    assert len(request_id_from(header)) == 32


@pytest.mark.parametrize(
    "header",
    [None, "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
     "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
     " ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
     "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"],
)  # fmt: skip
def test_an_invalid_traceparent_has_no_trace_id(header):
    """Malformed, all-zero trace or parent id, and version-ff (padded too) carry no trace id."""
    assert trace_id_from(header) is None


@pytest.mark.django_db
def test_the_event_names_the_authenticated_user(logs):
    """A request whose user was loaded carries that user's id; the route is the URL pattern."""
    user = get_user_model().objects.create_user("ada", password="pw-for-tests-only")
    client = Client()
    client.force_login(user)
    client.get("/admin/", HTTP_X_REQUEST_ID="rid-user")
    rows = [r.nr_llm_event.as_dict() for r in logs.named("nr_llm.requests")]
    assert [(row["request_id"], row["user_id"]) for row in rows] == [("rid-user", str(user.pk))]


@pytest.mark.django_db
def test_without_a_wrapper_the_middleware_takes_the_ids_from_the_headers(logs):
    """The middleware's own completion reads X-Request-ID and traceparent like the wrapper."""
    Client().get("/admin/login/", HTTP_X_REQUEST_ID="rid-plain", HTTP_TRACEPARENT=TRACEPARENT)
    rows = [r.nr_llm_event.as_dict() for r in logs.named("nr_llm.requests")]
    assert [(row["request_id"], row["trace_id"]) for row in rows] == [
        ("rid-plain", "4bf92f3577b34da6a3ce929d0e0e4736")
    ]


def test_started_at_is_the_arrival_time_in_utc(logs):
    """The event's started_at is an aware UTC datetime taken when the completion opened."""
    before = datetime.now(UTC)
    done = completion(200)
    after = datetime.now(UTC)
    done.finish()
    (record,) = logs.named("nr_llm.requests")
    started = record.nr_llm_event.started_at
    assert started.tzinfo is UTC
    # One microsecond either way: the float clock is rounded to whole microseconds.
    tick = timedelta(microseconds=1)
    assert before - tick <= started <= after + tick


def test_a_5xx_after_the_client_left_is_a_failure_row_not_a_cancellation(logs):
    """A server error stays a server error in the event too: a failure row with its error type.

    The client having left does not turn an unclassified exception into a cancellation
    (seed 003: an unrelated cause stays on the ordinary application-error path), so the
    default configuration still emits it.
    """
    done = completion(500, aborted_in=Phase.HANDLER)
    done.error_type = "ValueError"
    done.finish()
    (record,) = logs.named("nr_llm.requests")
    row = record.nr_llm_event.as_dict()
    assert "outcome" not in row
    assert (row["ok"], row["status_code"], row["error_type"]) == (False, 500, "ValueError")
