"""Task-augmented tools/call against a real server on 127.0.0.1 (tests/peers/task_server.py),
in both eras: polling within the one budget, the interval's floor and ceiling, a forgotten
task, a task that never ends, input through the responder, cancel, resume in another client,
and the server's own log proving the tools/call went once.

The clock the budget is measured on is a fake one that the client's ``sleep`` moves, so the
waits are asserted exactly and nothing sleeps for real (the legs themselves take real
milliseconds, which the fake clock does not count).
"""

from __future__ import annotations

import json
import pickle
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, ElicitationAnswer, Elicitor, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.tasks import MAX_POLL_MS, TaskError, TaskOptions, TaskState
from tests.mcp.scripted import FakeClock
from tests.peers import running

ERAS = ("modern", "handshake")


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running([sys.executable, "-m", "tests.peers.task_server"]) as port:
        yield f"http://127.0.0.1:{port}"


class Sleeper:
    """The client's sleep: records each wait and moves the fake clock by it."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(round(seconds, 3))
        self.clock.advance(seconds)


def _client(clock: FakeClock | None = None) -> tuple[McpClient, Sleeper | None]:
    if clock is None:
        return McpClient(connection=ConnectionSettings(allow_private_networks=True)), None
    sleeper = Sleeper(clock)
    return McpClient(
        connection=ConnectionSettings(allow_private_networks=True), clock=clock, sleep=sleeper
    ), sleeper


def _endpoint(base: str, era: str, scenario: str, tag: str, budget: float = 20) -> Endpoint:
    return Endpoint(identifier="tasks", url=f"{base}/{era}/{scenario}/{tag}/mcp", budget_seconds=budget)


def _seen(base: str, endpoint: Endpoint) -> list[dict[str, Any]]:
    path = endpoint.url.split("/", 3)[3]
    with urllib.request.urlopen(f"{base}/seen", timeout=5) as answer:
        return [row for row in json.load(answer) if row["path"] == f"/{path}"]


def _methods(rows: list[dict[str, Any]]) -> list[str]:
    return [row["method"] for row in rows if row["method"] not in ("server/discover", "initialize")]


OPTIONS = TaskOptions(task_support="optional")


@pytest.mark.parametrize("era", ERAS)
def test_a_task_is_polled_and_its_result_read_once(base: str, era: str) -> None:
    states: list[TaskState] = []
    clock = FakeClock()
    client, sleeper = _client(clock)
    endpoint = _endpoint(base, era, "quick", "once")
    outcome = client.call_tool(
        endpoint, "work", {}, task=TaskOptions(task_support="optional", on_state=states.append)
    )
    assert outcome.text == "done after 2 polls" and not outcome.is_error and outcome.era == era
    assert outcome.task is not None and outcome.task.status == "completed" and outcome.task.era == era
    assert [s.status for s in states][0] == "working" and states[-1].status == "completed"
    assert sleeper is not None and sleeper.waits == [0.1, 0.1]  # the server's 100 ms, honoured
    rows = _seen(base, endpoint)
    if era == "modern":
        assert _methods(rows) == ["tools/call", "tasks/get", "tasks/get"]
        # Every poll declared the extension, echoed the latest requestState and named the task.
        polls = [row for row in rows if row["method"] == "tasks/get"]
        assert all(row["echo_ok"] and row["extension"] for row in polls)
        assert all(row["mcp_name"] == outcome.task.task_id for row in polls)
    else:
        assert _methods(rows) == [
            "notifications/initialized",
            "tools/call",
            "tasks/get",
            "tasks/get",
            "tasks/result",
            "DELETE",
        ]
    assert [row["method"] for row in rows].count("tools/call") == 1


@pytest.mark.parametrize("era", ERAS)
def test_without_task_options_the_call_is_plain(base: str, era: str) -> None:
    client, _ = _client()
    endpoint = _endpoint(base, era, "quick", "plain")
    outcome = client.call_tool(endpoint, "work", {})
    assert outcome.text == "direct" and outcome.task is None
    assert not any(row.get("extension") for row in _seen(base, endpoint))


def test_the_2025_form_asks_only_for_a_tool_that_allows_tasks(base: str) -> None:
    """2025-11-25: a tool whose execution.taskSupport is absent or forbidden is never asked as a task."""
    client, _ = _client()
    for support in (None, "forbidden"):
        endpoint = _endpoint(base, "handshake", "quick", f"support-{support}")
        outcome = client.call_tool(endpoint, "work", {}, task=TaskOptions(task_support=support))
        assert outcome.text == "direct" and outcome.task is None


@pytest.mark.parametrize("era", ERAS)
def test_a_poll_interval_of_zero_is_raised_to_the_floor(base: str, era: str) -> None:
    clock = FakeClock()
    client, sleeper = _client(clock)
    endpoint = _endpoint(base, era, "zero", "floor")
    outcome = client.call_tool(endpoint, "work", {}, task=OPTIONS)
    assert outcome.text == "done after 5 polls"
    assert sleeper is not None and sleeper.waits == [0.1] * 5


@pytest.mark.parametrize("era", ERAS)
def test_a_poll_interval_of_ten_days_is_cut_to_the_ceiling_and_the_budget(base: str, era: str) -> None:
    """Ten days is waited as 30 s, and no wait outlasts the budget: the last poll is made while a
    leg still fits, then the task is task_pending with what resumes it."""
    clock = FakeClock()
    client, sleeper = _client(clock)
    endpoint = _endpoint(base, era, "days", "ceiling", budget=100)
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    assert raised.value.kind == "task_pending" and raised.value.accepted
    assert "not sent again" in str(raised.value) and "polling can resume" in str(raised.value)
    assert sleeper is not None and sleeper.waits[:3] == [MAX_POLL_MS / 1000] * 3
    assert sum(sleeper.waits) <= 99
    assert raised.value.task is not None and raised.value.task.status == "working"
    assert [row["method"] for row in _seen(base, endpoint)].count("tools/call") == 1


@pytest.mark.parametrize("era", ERAS)
def test_follow_seconds_bound_the_polling_within_a_larger_budget(base: str, era: str) -> None:
    """A worker's call keeps the whole budget, yet follows its task for a slice only: the polls
    stop within ``follow_seconds`` of the task's creation, task_pending with what resumes it."""
    clock = FakeClock()
    client, sleeper = _client(clock)
    endpoint = _endpoint(base, era, "never", "slice", budget=100)
    options = TaskOptions(task_support="optional", follow_seconds=3)
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=options)
    assert raised.value.kind == "task_pending" and raised.value.task is not None
    assert raised.value.task.status == "working"
    assert sleeper is not None and 1 <= sum(sleeper.waits) <= 3
    assert [row["method"] for row in _seen(base, endpoint)].count("tools/call") == 1


@pytest.mark.parametrize("era", ERAS)
def test_a_task_that_never_ends_is_bounded_by_the_budget(base: str, era: str) -> None:
    """On the real clock: a 3-second budget ends a never-ending task in about 3 seconds."""
    client, _ = _client()
    endpoint = _endpoint(base, era, "never", "bounded", budget=3)
    started = time.monotonic()
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    elapsed = time.monotonic() - started
    assert raised.value.kind == "task_pending" and 1.5 < elapsed < 4.0
    rows = _seen(base, endpoint)
    assert [row["method"] for row in rows].count("tools/call") == 1
    assert "DELETE" not in [row["method"] for row in rows]  # the task's session is kept for a resume


@pytest.mark.parametrize("era", ERAS)
def test_a_task_the_server_forgets_is_task_lost(base: str, era: str) -> None:
    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, era, "forget", "lost")
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    assert raised.value.kind == "task_lost" and raised.value.accepted and raised.value.code == -32602
    assert "may have run" in str(raised.value) and "not sent again" in str(raised.value)
    assert [row["method"] for row in _seen(base, endpoint)].count("tools/call") == 1
    again = pickle.loads(pickle.dumps(raised.value))  # crosses a task queue's process boundary
    assert again.kind == "task_lost" and again.task == raised.value.task


@pytest.mark.parametrize("era", ERAS)
def test_a_failed_task_is_task_failed_with_the_servers_error(base: str, era: str) -> None:
    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, era, "failed", "failed")
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    assert raised.value.kind == "task_failed" and raised.value.code == -32603
    assert "rate limit" in str(raised.value)
    assert raised.value.task is not None and raised.value.task.status == "failed"


@pytest.mark.parametrize("era", ERAS)
def test_input_without_a_responder_ends_as_input_required_with_the_task_kept(base: str, era: str) -> None:
    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, era, "input", "no-responder")
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    assert raised.value.kind == "input_required"
    assert raised.value.task is not None and raised.value.task.status == "input_required"


def test_input_during_a_2026_task_goes_through_the_responder(base: str) -> None:
    asked: list[str] = []

    def respond(request: Any) -> ElicitationAnswer:
        asked.append(request.message)
        return ElicitationAnswer.accept({"name": "Ada"})

    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, "modern", "input", "responder")
    outcome = client.call_tool(endpoint, "work", {}, task=OPTIONS, responder=Elicitor(respond, "tasks"))
    assert outcome.text == "Hello, Ada!" and asked == ["Please enter your name."]
    methods = _methods(_seen(base, endpoint))
    assert methods.count("tasks/update") == 1 and methods.count("tools/call") == 1


@pytest.mark.parametrize("era", ERAS)
def test_polling_resumes_in_another_client_from_the_stored_state(base: str, era: str) -> None:
    """A worker keeps the task's state as JSON, dies; another process's client resumes from it
    and reads the result; the tools/call is never sent again."""
    kept: list[dict[str, Any]] = []
    first, _ = _client()
    endpoint = _endpoint(base, era, "slow", "resume", budget=2)
    with pytest.raises(TaskError) as raised:
        first.call_tool(
            endpoint,
            "work",
            {},
            task=TaskOptions(task_support="optional", on_state=lambda s: kept.append(s.as_dict())),
        )
    assert raised.value.kind == "task_pending"
    stored = json.loads(json.dumps(kept[0]))  # what a ledger row would hold
    resumed = TaskState.from_dict(stored)
    # The session id and the server's request state are kept, and out of every repr (a log line).
    secrets = [value for value in (resumed.session_id, resumed.request_state) if value]
    assert secrets and not any(value in repr(resumed) for value in secrets)
    second, _ = _client()
    outcome = second.poll_task(_endpoint(base, era, "slow", "resume", budget=10), resumed, "work")
    assert (
        outcome.text.startswith("done after")
        and outcome.task is not None
        and outcome.task.status == "completed"
    )
    rows = _seen(base, endpoint)
    assert [row["method"] for row in rows].count("tools/call") == 1
    if era == "handshake":
        # The resume went on in the task's own session, with no second handshake.
        assert [row["method"] for row in rows].count("initialize") == 1
        assert rows[-1]["method"] == "DELETE"


@pytest.mark.parametrize("era", ERAS)
def test_get_and_cancel_a_task(base: str, era: str) -> None:
    client, _ = _client()
    endpoint = _endpoint(base, era, "never", "cancel", budget=2)
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    task = raised.value.task
    assert task is not None
    endpoint = _endpoint(base, era, "never", "cancel", budget=5)
    assert client.get_task(endpoint, task).status == "working"
    assert client.cancel_task(endpoint, task, "work").status == "cancelled"
    # Cancelling a task that ended: the server refuses (2025) or acknowledges (2026); either way
    # the answer is the task's state, not an error.
    if era == "modern":
        assert client.cancel_task(endpoint, task).status == "cancelled"
    with pytest.raises(TaskError) as ended:
        client.poll_task(endpoint, task, "work")
    # 2026: the task is there, cancelled. 2025: a session whose task ended cancelled holds nothing
    # left to read, so the cancel ended it (DELETE), and the task went with it.
    assert ended.value.kind == ("task_cancelled" if era == "modern" else "task_lost")
    if era == "handshake":
        assert [row["method"] for row in _seen(base, endpoint)][-2:] == ["DELETE", "tasks/get"]


def test_a_forgotten_session_loses_its_task(base: str) -> None:
    """2025-11-25: the session is the task's home; a resume whose session the server forgot is task_lost."""
    client, _ = _client()
    endpoint = _endpoint(base, "handshake", "never", "gone-session", budget=2)
    with pytest.raises(TaskError) as raised:
        client.call_tool(endpoint, "work", {}, task=OPTIONS)
    task = raised.value.task
    assert task is not None and task.session_id
    forgotten = TaskState.from_dict({**task.as_dict(), "session_id": "not-a-session"})
    with pytest.raises(McpTransportError) as lost:
        client.poll_task(_endpoint(base, "handshake", "never", "gone-session", budget=5), forgotten)
    assert lost.value.kind == "task_lost"


@pytest.mark.parametrize("era", ERAS)
def test_a_refused_poll_never_sends_the_call_again_in_the_other_era(base: str, era: str) -> None:
    """A tasks/get refused the way the other era refuses (400, -32601) is the task's failure, not
    a reason for an era fallback: the second call, with the era remembered, goes once too."""
    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, era, "refuse", "fallback")
    failures = []
    for _ in range(2):
        with pytest.raises(McpTransportError) as raised:
            client.call_tool(endpoint, "work", {}, task=OPTIONS)
        failures.append(raised.value)
    methods = [row["method"] for row in _seen(base, endpoint)]
    assert methods.count("tools/call") == 2 and methods.count("tasks/get") == 2
    for failure in failures:
        assert isinstance(failure, TaskError) and failure.task is not None
        assert failure.accepted and failure.code == -32601
    first_call = methods.index("tools/call")
    # Nothing re-negotiated after the first call: no probe, no handshake of the other era.
    assert "server/discover" not in methods[first_call:]
    assert methods.count("initialize") == (0 if era == "modern" else 2)


def test_a_state_callback_that_fails_does_not_stop_the_polling(
    base: str, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []

    def broken(state: TaskState) -> None:
        heard.append(state.status)
        raise RuntimeError("the row could not be written")

    client, _ = _client(FakeClock())
    endpoint = _endpoint(base, "modern", "quick", "broken-callback")
    outcome = client.call_tool(endpoint, "work", {}, task=TaskOptions(on_state=broken))
    assert outcome.text == "done after 2 polls" and heard[0] == "working" and heard[-1] == "completed"
    assert "MCP task state callback failed" in caplog.text
