"""The client driver the conformance suite runs: ``python -m tests.conformance.client <url>``.

The suite starts a scenario's server, then runs this module with the server URL as the
last argument and the scenario in ``MCP_CONFORMANCE_SCENARIO`` (scenario data, such as
the arguments to send, as JSON in ``MCP_CONFORMANCE_CONTEXT``). Each scenario maps to
one *behaviour*: a function that uses ``McpClient`` as the app does. Exit status 0 means
the behaviour finished; the suite judges the wire, not this status (except where a
scenario says a client error is a failure).

Add a scenario: write ``def behaviour(run: Run) -> None`` and decorate it with
``@behaviour_of("scenario-name")`` (several names may share one; a name ending in ``/``
matches every scenario under that prefix, e.g. ``"auth/"``). Then list the scenario in
``tests/conformance/test_conformance.py``. See README.md.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient, McpTransportError
from nr_llm.mcp.protocol.elicitation import ElicitationAnswer, Elicitor
from nr_llm.mcp.protocol.schema import SchemaRefused, normalise_schema
from tests.conformance import auth, django_app

Behaviour = Callable[["Run"], None]
BEHAVIOURS: dict[str, Behaviour] = {}


@dataclass
class Run:
    """One scenario run: the client, the endpoint, and the scenario's context."""

    scenario: str
    endpoint: Endpoint
    context: dict[str, Any]
    client: McpClient = field(
        default_factory=lambda: McpClient(connection=ConnectionSettings(allow_private_networks=True))
    )

    def say(self, text: str) -> None:
        # stdout is saved by the suite beside its checks: the driver's own log of the run.
        print(text, flush=True)


def behaviour_of(*scenarios: str) -> Callable[[Behaviour], Behaviour]:
    def register(function: Behaviour) -> Behaviour:
        for name in scenarios:
            if name in BEHAVIOURS:
                raise ValueError(f"scenario {name!r} has two behaviours")
            BEHAVIOURS[name] = function
        return function

    return register


def behaviour_for(scenario: str) -> Behaviour:
    """The behaviour registered for ``scenario``: an exact name first, then the longest prefix."""
    if scenario in BEHAVIOURS:
        return BEHAVIOURS[scenario]
    prefixes = [name for name in BEHAVIOURS if name.endswith("/") and scenario.startswith(name)]
    if not prefixes:
        raise LookupError(f"no behaviour for conformance scenario {scenario!r}")
    return BEHAVIOURS[max(prefixes, key=len)]


def example_arguments(schema: object) -> dict[str, Any]:
    """Arguments a scenario tool accepts when the scenario names none: each required
    property gets a plain value of its type."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    plain = {"number": 1, "integer": 1, "boolean": True, "string": "example", "object": {}, "array": []}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        spec = properties.get(name)
        kind = spec.get("type") if isinstance(spec, dict) else None
        arguments[name] = plain.get(kind, "example") if isinstance(kind, str) else "example"
    return arguments


def _context_calls(run: Run) -> dict[str, dict[str, Any]]:
    calls = run.context.get("toolCalls")
    if not isinstance(calls, list):
        return {}
    return {call["name"]: call.get("arguments") or {} for call in calls if isinstance(call, dict)}


def call_listed_tools(run: Run, *, only: set[str] | None = None) -> None:
    """List the tools, then call each (the context's arguments, else example arguments)
    with its listed input schema. A tool the client refuses before sending is skipped."""
    tools = run.client.list_tools(run.endpoint)
    run.say(f"listed {len(tools)} tools")
    given = _context_calls(run)
    for tool in tools:
        name = tool.get("name")
        if not isinstance(name, str) or (only is not None and name not in only):
            continue
        schema = tool.get("inputSchema")
        arguments = given.get(name, example_arguments(schema))
        try:
            outcome = run.client.call_tool(
                run.endpoint, name, arguments, input_schema=schema if isinstance(schema, dict) else None
            )
        except McpTransportError as exc:
            if exc.kind != "invalid_tool":
                raise
            run.say(f"refused {name}: {exc}")
            continue
        run.say(f"called {name}: is_error={outcome.is_error} text={outcome.text[:200]!r}")


@behaviour_of("initialize")
def handshake(run: Run) -> None:
    report = run.client.ping(run.endpoint)
    run.say(f"ping: {report}")
    if not report.reachable:
        raise SystemExit(1)
    run.client.list_tools(run.endpoint)


@behaviour_of(
    "tools_call",
    "sse-retry",
    "request-metadata",
    "http-standard-headers",
    "http-invalid-tool-headers",
)
def list_and_call(run: Run) -> None:
    call_listed_tools(run)


@behaviour_of("json-schema-ref-no-deref")
def list_only(run: Run) -> None:
    """The scenario's server answers tools/list only (tools/call is -32601 there); the check
    is that neither listing nor normalising the schema (the import's step) fetches its network
    $ref: the normaliser refuses the tool and names the reference's place."""
    tools = run.client.list_tools(run.endpoint)
    run.say(f"listed {[tool.get('name') for tool in tools]}")
    for tool in tools:
        try:
            normalise_schema(tool.get("inputSchema"))
        except SchemaRefused as exc:
            run.say(f"{tool.get('name')}: refused, {exc}")


@behaviour_of("http-custom-headers")
def call_context_tools(run: Run) -> None:
    call_listed_tools(run, only=set(_context_calls(run)))


@behaviour_of("json-schema-2020-12-preservation")
def echo_schema(run: Run) -> None:
    """Hand the focal tool's input schema back through the echo tool, exactly as listed."""
    tools = {tool.get("name"): tool for tool in run.client.list_tools(run.endpoint)}
    focal = next(tool for name, tool in tools.items() if name != "json_schema_echo")
    run.client.call_tool(
        run.endpoint,
        "json_schema_echo",
        {"schema": focal["inputSchema"]},
        input_schema=tools["json_schema_echo"].get("inputSchema"),
    )


class AcceptingResponder:
    """Answers every elicitation a server asks for with "accept" (the suite's mock expects it)."""

    capabilities: dict[str, Any] = {"elicitation": {}}

    def answer(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        return {
            key: {"action": "accept", "content": {"confirmed": True}}
            for key, request in input_requests.items()
            if isinstance(request, dict) and request.get("method") == "elicitation/create"
        }


@behaviour_of("sep-2322-client-request-state")
def answer_input_requests(run: Run) -> None:
    responder = AcceptingResponder()
    for tool in run.client.list_tools(run.endpoint):
        outcome = run.client.call_tool(
            run.endpoint, tool["name"], {}, input_schema=tool.get("inputSchema"), responder=responder
        )
        run.say(f"called {tool['name']}: {outcome.text[:200]!r}")


@behaviour_of("elicitation-sep1034-client-defaults")
def accept_with_defaults(run: Run) -> None:
    """Accept every elicitation with nothing filled in: the schema's defaults (SEP-1034) are
    the Elicitor's to apply, in either era."""
    responder = Elicitor(lambda request: ElicitationAnswer.accept(), run.endpoint.identifier)
    for tool in run.client.list_tools(run.endpoint):
        outcome = run.client.call_tool(
            run.endpoint, tool["name"], {}, input_schema=tool.get("inputSchema"), responder=responder
        )
        run.say(f"called {tool['name']}: {outcome.text[:300]!r}")


@behaviour_of("auth/")
def authorize_and_call(run: Run) -> None:
    """Authorization scenarios: list and call the tools, connecting as the operator when asked
    (through the Django app when the runner asks for it, see django_app.py)."""
    if django_app.wanted():
        django_app.authorize_and(call_listed_tools, run)
    else:
        auth.authorize_and(call_listed_tools, run)


def loopback(url: str) -> str:
    """The suite's servers announce ``localhost``; tests talk to 127.0.0.1 only."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname == "localhost":
        parts = parts._replace(netloc=parts.netloc.replace("localhost", "127.0.0.1", 1))
    return urllib.parse.urlunsplit(parts)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m tests.conformance.client <server-url>", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    if scenario.startswith("auth/"):
        # Resource and issuers are compared as strings: the announced URL is kept as it is,
        # and its localhost resolves to 127.0.0.1 only.
        auth.pin_localhost_to_ipv4()
        url = argv[-1]
    else:
        url = loopback(argv[-1])
    endpoint = Endpoint(identifier="conformance", url=url, budget_seconds=10)
    behaviour = behaviour_for(scenario)
    run = Run(scenario=scenario, endpoint=endpoint, context=context if isinstance(context, dict) else {})
    run.say(f"scenario {scenario!r}: {behaviour.__name__} against {endpoint.url}")
    try:
        behaviour(run)
    except McpTransportError as exc:
        print(f"{exc.kind}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
