"""An MCP server whose tools/call answers with a task, in either era, misbehaving on purpose.

``python -m tests.peers.task_server`` binds 127.0.0.1 on an OS-chosen port and prints
``PORT <n>``. The path is ``/ERA/SCENARIO[/tag...]/mcp``: ERA ``modern`` speaks 2026-07-28 with
the tasks extension (SEP-2663: ``resultType: "task"``, ``tasks/get`` with the result inline,
``tasks/update``, an acknowledging ``tasks/cancel``, a ``requestState`` that changes on every
answer and must be echoed); ERA ``handshake`` speaks 2025-11-25 with sessions and the core tasks
utility (``params.task``, ``tasks/result``, a ``tasks/cancel`` answering the task; a task lives
in its session and dies with it). A tools/call that does not ask for a task (2025) or does not
declare the extension (2026) is answered directly.

SCENARIO:
    quick     poll interval 100 ms; the task completes at its second tasks/get
    zero      poll interval 0; completes at its fifth tasks/get
    days      poll interval ten days; never completes
    never     poll interval 200 ms; never completes
    slow      poll interval 100 ms; completes 1.5 s after it was created (wall clock)
    forget    every tasks/get (and tasks/result) answers -32602 "Task not found"
    failed    the task fails: a JSON-RPC error (inline in 2026, from tasks/result in 2025)
    refuse    every tasks/get is refused the way a server of the other era refuses a request
              (HTTP 400, -32601): no reason to send the tools/call again in the other era
    input     the task needs a name (an elicitation): input_required until it is given
              (2026: tasks/update), then completed greeting it

``GET /seen`` lists every request as JSON (method, era, path, session, task id, the
requestState it echoed and whether that was the one last sent): the log that proves no
tools/call is sent twice.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EXTENSION = "io.modelcontextprotocol/tasks"
TEN_DAYS_MS = 10 * 24 * 3600 * 1000
INTERVALS = {"quick": 100, "zero": 0, "days": TEN_DAYS_MS, "never": 200, "slow": 100, "forget": 100}
LOCK = threading.Lock()
SEEN: list[dict[str, Any]] = []
TASKS: dict[str, dict[str, Any]] = {}
SESSIONS: set[str] = set()
STATES = itertools.count(1)


def _task(task: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "taskId": task["id"],
        "status": task["status"],
        "createdAt": "2026-12-05T07:00:00Z",
        "lastUpdatedAt": "2026-12-05T07:00:00Z",
    }
    interval = INTERVALS.get(task["scenario"], 100)
    if task["era"] == "modern":
        body.update(ttlMs=None, pollIntervalMs=interval)
        task["state"] = f"state-{next(STATES)}"
        body["requestState"] = task["state"]
    else:
        body.update(ttl=60000, pollInterval=interval)
    if task["status"] == "working":
        body["statusMessage"] = f"poll {task['gets']}"
    return body


def _advance(task: dict[str, Any]) -> None:
    """What a tasks/get finds: the scenario moves the task on."""
    task["gets"] += 1
    scenario, gets = task["scenario"], task["gets"]
    if task["status"] in ("completed", "failed", "cancelled"):
        return
    slow_done = scenario == "slow" and time.monotonic() - task["created"] >= 1.5
    if scenario == "quick" and gets >= 2 or scenario == "zero" and gets >= 5 or slow_done:
        task["status"] = "completed"
    elif scenario == "failed":
        task["status"] = "failed"
    elif scenario == "input":
        task["status"] = "completed" if task.get("name") else "input_required"


def _result(task: dict[str, Any]) -> dict[str, Any]:
    text = f"Hello, {task['name']}!" if task.get("name") else f"done after {task['gets']} polls"
    return {"content": [{"type": "text", "text": text}], "isError": False}


FAILURE = {"code": -32603, "message": "API rate limit exceeded"}
NOT_FOUND = {"code": -32602, "message": "Failed to retrieve task: Task not found"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/seen":
            with LOCK:
                self._send(200, json.dumps(SEEN))
        else:
            self._send(405, "")

    def do_DELETE(self) -> None:
        with LOCK:
            SESSIONS.discard(self.headers.get("Mcp-Session-Id", ""))
            SEEN.append(
                {"method": "DELETE", "path": self.path, "session": self.headers.get("Mcp-Session-Id")}
            )
        self._send(200, "")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        parts = self.path.strip("/").split("/")
        era, scenario = parts[0], parts[1]
        method, params = body.get("method"), body.get("params") or {}
        session = self.headers.get("Mcp-Session-Id")
        with LOCK:
            task = TASKS.get(params.get("taskId", ""))
            echoed = params.get("requestState")
            SEEN.append(
                {
                    "method": method,
                    "era": era,
                    "path": self.path,
                    "session": session,
                    "task": params.get("taskId"),
                    "request_state": echoed,
                    "echo_ok": task is None or era != "modern" or echoed == task.get("state"),
                    "extension": EXTENSION
                    in (
                        (
                            (params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities")
                            or {}
                        ).get("extensions")
                        or {}
                    ),
                    "mcp_name": self.headers.get("Mcp-Name"),
                }
            )
            if era == "handshake" and method != "initialize" and session not in SESSIONS:
                self._send(404, "")
                return
            if scenario == "refuse" and method == "tasks/get":
                error = {"code": -32601, "message": "Method not found"}
                self._send(400, json.dumps({"jsonrpc": "2.0", "id": body.get("id"), "error": error}))
                return
            answer = self._answer(era, scenario, method, params, task)
        if answer is None:
            self._send(202, "")
            return
        headers = {}
        if method == "initialize":
            session = uuid.uuid4().hex
            with LOCK:
                SESSIONS.add(session)
            headers["Mcp-Session-Id"] = session
        self._send(200, json.dumps({"jsonrpc": "2.0", "id": body.get("id"), **answer}), headers)

    def _answer(
        self, era: str, scenario: str, method: str | None, params: dict[str, Any], task: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        complete = {"resultType": "complete"} if era == "modern" else {}
        if method is not None and method.startswith("notifications/"):
            return None
        if method == "server/discover":
            if era != "modern":
                return {"error": {"code": -32601, "message": "Method not found"}}
            return {
                "result": {
                    **complete,
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}, "extensions": {EXTENSION: {}}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "task-server", "version": "1"}},
                }
            }
        if method == "initialize":
            return {
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {
                        "tools": {},
                        "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}},
                    },
                    "serverInfo": {"name": "task-server", "version": "1"},
                }
            }
        if method == "tools/call":
            meta = params.get("_meta") or {}
            declared = EXTENSION in (
                (meta.get("io.modelcontextprotocol/clientCapabilities") or {}).get("extensions") or {}
            )
            if (era == "modern" and not declared) or (era == "handshake" and "task" not in params):
                return {
                    "result": {**complete, "content": [{"type": "text", "text": "direct"}], "isError": False}
                }
            new: dict[str, Any] = {
                "id": uuid.uuid4().hex,
                "era": era,
                "scenario": scenario,
                "status": "working",
                "gets": 0,
                "created": time.monotonic(),
            }
            TASKS[new["id"]] = new
            if era == "modern":
                return {"result": {"resultType": "task", **_task(new)}}
            return {"result": {"task": _task(new)}}
        if method in ("tasks/get", "tasks/result", "tasks/update", "tasks/cancel"):
            if task is None or scenario == "forget":
                if era == "modern" and method in ("tasks/update", "tasks/cancel"):
                    return {"result": complete}  # SEP-2663 acknowledges any id
                return {"error": NOT_FOUND}
            if method == "tasks/update":
                responses = params.get("inputResponses") or {}
                answer = responses.get("name") or {}
                if answer.get("action") == "accept":
                    task["name"] = (answer.get("content") or {}).get("name", "")
                return {"result": complete}
            if method == "tasks/cancel":
                if task["status"] in ("completed", "failed", "cancelled"):
                    if era == "modern":
                        return {"result": complete}
                    return {"error": {"code": -32602, "message": "Task already in a terminal status"}}
                task["status"] = "cancelled"
                return {"result": complete if era == "modern" else _task(task)}
            if method == "tasks/result":
                if task["status"] == "failed":
                    return {"error": FAILURE}
                if task["status"] != "completed":
                    return {"error": {"code": -32603, "message": "this test server never blocks"}}
                return {"result": _result(task)}
            _advance(task)
            got = _task(task)
            if era == "modern":
                got = {**complete, **got}
                if task["status"] == "completed":
                    got["result"] = _result(task)
                elif task["status"] == "failed":
                    got["error"] = FAILURE
                elif task["status"] == "input_required":
                    got["inputRequests"] = {
                        "name": {
                            "method": "elicitation/create",
                            "params": {
                                "mode": "form",
                                "message": "Please enter your name.",
                                "requestedSchema": {
                                    "type": "object",
                                    "properties": {"name": {"type": "string"}},
                                    "required": ["name"],
                                },
                            },
                        }
                    }
            return {"result": got}
        return {"error": {"code": -32601, "message": f"Method not found: {method}"}}

    def _send(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        data = text.encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()
