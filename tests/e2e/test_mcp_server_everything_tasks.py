"""Task-augmented tools/call against the official reference server, server-everything.

Its ``simulate-research-query`` tool requires task augmentation (2025-11-25 form:
``execution.taskSupport: "required"``, the server declaring ``tasks.requests.tools.call``) and
runs four one-second stages; with ``ambiguous`` and a client that declared elicitation, it asks
for a clarification while the task is ``input_required``, on the stream of ``tasks/result``.
The server keeps its tasks per session, so a resume goes on in the task's own session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from nr_llm.mcp import ConnectionSettings, ElicitationAnswer, Elicitor, Endpoint, McpClient
from nr_llm.mcp.protocol.tasks import TaskError, TaskOptions, TaskState
from tests.peers import ROOT, running

pytestmark = pytest.mark.e2e

PEERS = ROOT / "tests" / "e2e" / "peers"
EVERYTHING = PEERS / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
TOOL = "simulate-research-query"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `make peers`")
    command = ["node", "-r", str(PEERS / "loopback.cjs"), str(EVERYTHING), "streamableHttp"]
    with running(command) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def _endpoint(url: str, budget: float) -> Endpoint:
    return Endpoint(identifier="everything", url=url, budget_seconds=budget)


def _task_support(client: McpClient, url: str) -> str | None:
    """The tool's listed execution.taskSupport (it is registered once a client is initialized)."""
    tools = {tool["name"]: tool for tool in client.list_tools(_endpoint(url, 10))}
    execution = tools[TOOL].get("execution") or {}
    support = execution.get("taskSupport")
    return support if isinstance(support, str) else None


def test_the_research_task_completes_within_one_budget(url: str) -> None:
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    support = _task_support(client, url)
    assert support == "required"
    states: list[TaskState] = []
    outcome = client.call_tool(
        _endpoint(url, 20),
        TOOL,
        {"topic": "tides"},
        task=TaskOptions(task_support=support, on_state=states.append),
    )
    assert not outcome.is_error and "# Research Report: tides" in outcome.text
    assert outcome.task is not None and outcome.task.status == "completed" and outcome.era == "handshake"
    # The server's status messages were heard while it worked (its stages), then its end.
    assert states[0].status == "working" and states[-1].status == "completed"
    assert any("..." in state.status_message for state in states)
    assert states[0].poll_interval_ms == 1000


def test_the_task_survives_a_worker_restart_between_polls(url: str) -> None:
    """One process asks and is cut off by its budget with the task still working; another
    process resumes from the stored state alone and reads the report."""
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    support = _task_support(client, url)
    kept: list[dict[str, Any]] = []
    with pytest.raises(TaskError) as raised:
        client.call_tool(
            _endpoint(url, 2),
            TOOL,
            {"topic": "restarts"},
            task=TaskOptions(task_support=support, on_state=lambda state: kept.append(state.as_dict())),
        )
    assert raised.value.kind == "task_pending" and kept[-1]["status"] == "working"
    resume = (
        "import json, sys\n"
        "from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient\n"
        "from nr_llm.mcp.protocol.tasks import TaskState\n"
        "state = TaskState.from_dict(json.load(sys.stdin))\n"
        f"endpoint = Endpoint(identifier='everything', url={url!r}, budget_seconds=20)\n"
        "client = McpClient(connection=ConnectionSettings(allow_private_networks=True))\n"
        f"outcome = client.poll_task(endpoint, state, {TOOL!r})\n"
        "print(json.dumps({'text': outcome.text, 'status': outcome.task.status}))\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", resume],
        input=json.dumps(kept[-1]),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    answer = json.loads(finished.stdout)
    assert answer["status"] == "completed" and "# Research Report: restarts" in answer["text"]


def test_input_during_the_task_goes_through_the_responder(url: str) -> None:
    asked: list[str] = []

    def respond(request: Any) -> ElicitationAnswer:
        asked.append(request.message)
        return ElicitationAnswer.accept({"interpretation": "historical"})

    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    responder = Elicitor(respond, "everything")
    support = _task_support(client, url)
    outcome = client.call_tool(
        _endpoint(url, 30),
        TOOL,
        {"topic": "tea", "ambiguous": True},
        responder=responder,
        task=TaskOptions(task_support=support),
    )
    assert len(asked) == 1 and "could have multiple interpretations" in asked[0]
    assert "**Clarification**: historical" in outcome.text


def test_a_task_cancelled_through_the_client_ends_cancelled(url: str) -> None:
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    support = _task_support(client, url)
    with pytest.raises(TaskError) as raised:
        client.call_tool(_endpoint(url, 2), TOOL, {"topic": "cancel"}, task=TaskOptions(task_support=support))
    task = raised.value.task
    assert task is not None and task.status == "working"
    assert client.cancel_task(_endpoint(url, 10), task, TOOL).status == "cancelled"
