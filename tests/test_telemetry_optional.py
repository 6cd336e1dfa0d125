"""OpenTelemetry is optional: without the API nothing is imported and nothing is wrapped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from nr_llm.mcp.oauth.legs import OAuthLegs
from nr_llm.mcp.protocol import telemetry
from nr_llm.mcp.protocol.transport import Transport
from nr_llm.tools import execution
from tests.peers import ROOT, sdk_server

BLOCKED = textwrap.dedent(
    """
    import os
    import sys


    class NoOpenTelemetry:
        # As if the otel extra were not installed.
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None


    sys.meta_path.insert(0, NoOpenTelemetry())
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
    from nr_llm.mcp.protocol import telemetry
    from nr_llm.mcp.oauth.legs import OAuthLegs
    from nr_llm.mcp.protocol.transport import Transport
    from nr_llm.tools import execution

    assert telemetry.ENABLED is False
    for function in (Transport.post, OAuthLegs._leg, execution.execute, execution.resume):
        assert not hasattr(function, "__wrapped__"), function
    endpoint = Endpoint(identifier="sdk", url=sys.argv[1], budget_seconds=20)
    client = McpClient(connection=ConnectionSettings(allow_private_networks=True))
    outcome = client.call_tool(endpoint, "echo", {"text": "plain"})
    assert outcome.text == "plain", outcome
    loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
    assert not loaded, loaded
    print("without opentelemetry: ok")
    """
)


@pytest.mark.e2e
def test_without_the_api_nothing_is_imported_wrapped_or_broken() -> None:
    """In a process where opentelemetry cannot be imported: the entry points and the request
    choke point are the plain functions, no opentelemetry module is loaded, and a real tool
    call works."""
    with sdk_server("--stateless") as url:
        done = subprocess.run(
            [sys.executable, "-c", BLOCKED, url], cwd=ROOT, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "without opentelemetry: ok"


def test_with_the_api_the_choke_points_are_wrapped() -> None:
    """The counterpart, in this process (the dev extra installs the API): each is wrapped once."""
    assert telemetry.ENABLED is True
    for function in (Transport.post, OAuthLegs._leg, execution.execute, execution.resume):
        assert hasattr(function, "__wrapped__")
        assert not hasattr(function.__wrapped__, "__wrapped__")
