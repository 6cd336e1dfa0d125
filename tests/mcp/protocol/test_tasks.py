"""Reading a server's task objects, the poll interval's floor and ceiling, and the stored state."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from nr_llm.mcp.protocol import resend
from nr_llm.mcp.protocol.tasks import (
    MAX_POLL_MS,
    MIN_POLL_MS,
    TASK_ID_LIMIT,
    TaskError,
    TaskOptions,
    TaskState,
    state_of,
)


def _raw(**fields: Any) -> dict[str, Any]:
    return {"taskId": "t-1", "status": "working", **fields}


@pytest.mark.parametrize(
    ("fields", "interval", "ttl"),
    [
        ({"pollIntervalMs": 250, "ttlMs": 60_000}, 250, 60_000),  # the 2026-07-28 extension docs
        ({"pollIntervalMilliseconds": 500, "ttlSeconds": 60}, 500, 60_000),  # a SEP-2663 draft
        ({"pollInterval": 1000, "ttl": 300_000}, 1000, 300_000),  # 2025-11-25
        ({"pollIntervalMs": None, "ttlMs": None}, None, None),  # unlimited, no hint
        ({"pollIntervalMs": True}, None, None),  # a boolean is no number
        ({"pollIntervalMs": -5}, None, None),
        ({"pollIntervalMs": float("nan")}, None, None),
        ({"pollIntervalMs": 10**30}, 2**53, None),
    ],
)
def test_intervals_and_lifetimes_of_every_draft_are_read(
    fields: dict[str, Any], interval: Any, ttl: Any
) -> None:
    state = state_of(_raw(**fields), "s", "modern")
    assert (state.poll_interval_ms, state.ttl_ms) == (interval, ttl)


@pytest.mark.parametrize(
    ("suggested", "waited"),
    [(0, MIN_POLL_MS / 1000), (None, 1.0), (250, 0.25), (10 * 24 * 3600 * 1000, MAX_POLL_MS / 1000)],
)
def test_the_wait_is_the_servers_interval_within_a_floor_and_a_ceiling(suggested: Any, waited: float) -> None:
    state = state_of(_raw(pollIntervalMs=suggested), "s", "modern")
    assert TaskOptions().poll_seconds(state) == waited


def test_a_ceiling_below_the_floor_is_the_floor() -> None:
    state = state_of(_raw(pollIntervalMs=5000), "s", "modern")
    assert TaskOptions(min_poll_ms=2000, max_poll_ms=10).poll_seconds(state) == 2.0


@pytest.mark.parametrize(
    "raw",
    [
        "not an object",
        {"status": "working"},
        _raw(taskId=""),
        _raw(taskId=7),
        _raw(taskId="x" * (TASK_ID_LIMIT + 1)),
        _raw(status="paused"),
        _raw(requestState=["not", "a", "string"]),
    ],
)
def test_a_task_that_is_no_task_is_malformed_and_accepted(raw: object) -> None:
    """Whatever the server sent after accepting the call, the call may have run."""
    with pytest.raises(TaskError) as raised:
        state_of(raw, "s", "modern")
    assert raised.value.kind == "malformed" and raised.value.accepted and resend.may_have_run(raised.value)


def test_an_answer_about_another_task_is_malformed() -> None:
    first = state_of(_raw(), "s", "modern")
    with pytest.raises(TaskError, match="another task"):
        state_of(_raw(taskId="t-2"), "s", "modern", previous=first)


def test_request_state_follows_the_latest_message_and_is_dropped_when_absent() -> None:
    """SEP-2663: the latest value is echoed; a message without one means none is sent next."""
    first = state_of(_raw(requestState="a"), "s", "modern")
    second = state_of(_raw(requestState="b"), "s", "modern", previous=first)
    third = state_of(_raw(), "s", "modern", previous=second)
    assert (first.request_state, second.request_state, third.request_state) == ("a", "b", None)


def test_a_status_message_is_cleaned() -> None:
    state = state_of(_raw(statusMessage="step\x1b[31m 1\n"), "s", "modern")
    assert "\x1b" not in state.status_message and state.status_message.startswith("step")


def test_the_state_round_trips_through_json_and_keeps_its_secrets_out_of_repr() -> None:
    state = TaskState("t-1", "working", "handshake", session_id="sess-secret", request_state="rs-secret")
    again = TaskState.from_dict(json.loads(json.dumps(state.as_dict())))
    assert again == state
    assert "sess-secret" not in repr(state) and "rs-secret" not in repr(state)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"task_id": "t", "status": "working"},
        {"task_id": "t", "status": "sleeping", "era": "modern"},
        {"task_id": "", "status": "working", "era": "modern"},
        {"task_id": "t", "status": "working", "era": "1999"},
    ],
)
def test_a_stored_state_that_is_none_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        TaskState.from_dict(data)


def test_a_stored_state_ignores_fields_it_does_not_know() -> None:
    """A row written by a newer version still resumes."""
    state = TaskState.from_dict({"task_id": "t", "status": "working", "era": "modern", "future": 1})
    assert state.task_id == "t"


def test_a_task_error_survives_pickling_with_its_task() -> None:
    task = TaskState("t-1", "working", "modern", request_state="r")
    error = TaskError("task_pending", "s", "still running", task=task)
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, TaskError) and again.task == task and again.kind == "task_pending"
    assert again.accepted and str(again) == "still running"
