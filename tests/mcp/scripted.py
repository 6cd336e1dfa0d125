"""A scripted MCP server on ``responses`` with a fake clock, for unit tests of the client.

Each leg advances the fake clock by the seconds scripted for its method, so deadline
arithmetic is tested without sleeping; every request is recorded with the timeout it was
granted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import responses

# A literal documentation address (TEST-NET-1): no DNS lookup; `responses` answers for it.
URL = "http://192.0.2.1/mcp"


class FakeClock:
    def __init__(self) -> None:
        self.now_ns = 1_000_000_000_000

    def monotonic_ns(self) -> int:
        return self.now_ns

    def advance(self, seconds: float) -> None:
        self.now_ns += int(seconds * 1_000_000_000)


@dataclass
class Seen:
    http_method: str
    rpc_method: str | None
    headers: dict[str, str]
    body: dict[str, Any]
    timeout: Any


@dataclass
class ScriptedServer:
    clock: FakeClock
    seconds: dict[str, float] = field(default_factory=dict)
    session_id: str | None = "session-1"
    protocol_version: str = "2025-11-25"
    # tools/list pages by the cursor that asks for them (None: the first page).
    pages: dict[str | None, dict[str, Any]] = field(
        default_factory=lambda: {None: {"tools": [{"name": "echo"}]}}
    )
    call_result: dict[str, Any] = field(default_factory=lambda: {"content": [{"type": "text", "text": "ok"}]})
    overrides: dict[str, tuple[int, dict[str, str], str]] = field(default_factory=dict)
    # How many tools/call requests are answered 404, as by a server that forgot the session.
    forget_sessions: int = 0
    seen: list[Seen] = field(default_factory=list)

    def install(self, mock: responses.RequestsMock, url: str = URL) -> None:
        mock.add_callback(responses.POST, url, callback=self._answer)
        mock.add_callback(responses.DELETE, url, callback=self._answer)

    @property
    def grants(self) -> list[int]:
        return [seen.timeout[1] for seen in self.seen]

    @property
    def methods(self) -> list[str]:
        return [seen.rpc_method or seen.http_method for seen in self.seen]

    def _answer(self, request: Any) -> tuple[int, dict[str, str], str]:
        body = json.loads(request.body) if request.body else {}
        method = body.get("method")
        key = method or request.method
        self.seen.append(
            Seen(request.method, method, dict(request.headers), body, request.req_kwargs["timeout"])
        )
        self.clock.advance(self.seconds.get(key, 0.0))
        if method == "tools/call" and self.forget_sessions > 0:
            self.forget_sessions -= 1
            return 404, {}, ""
        if key in self.overrides:
            return self.overrides[key]
        if request.method == "DELETE":
            return 200, {}, ""
        if "id" not in body:
            return 202, {}, ""
        headers = {"Content-Type": "application/json"}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": self.protocol_version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "9.9"},
            }
            if self.session_id:
                headers["Mcp-Session-Id"] = self.session_id
        elif method == "tools/list":
            result = self.pages[(body.get("params") or {}).get("cursor")]
        else:
            result = self.call_result
        return 200, headers, json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result})
