"""The leg machine (wire/legs.py): the one place legs are sent and library errors mapped."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from nr_llm.mcp import ConnectionSettings, Endpoint, McpClient
from nr_llm.mcp.oauth import OAuthLegs
from nr_llm.mcp.wire.deadline import OperationDeadline

from ..scripted import FakeClock

PACKAGE = Path(__file__).resolve().parents[2] / "nr_llm"


def _imports(path: Path) -> set[str]:
    """Top-level packages imported at run time (``if TYPE_CHECKING:`` blocks left out)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_leg_machine_imports_requests_or_urllib3_at_run_time() -> None:
    """One leg machine: no other module of the package imports requests or urllib3 (the
    watchdog's connection classes excepted: they are urllib3's, below the machine), so TLS,
    caps and the error map cannot drift apart between MCP and OAuth legs again."""
    offenders = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if {"requests", "urllib3"} & _imports(path)
        and path.relative_to(PACKAGE).as_posix() not in ("mcp/wire/legs.py", "mcp/wire/watchdog.py")
    )
    assert offenders == []


def test_a_ca_bundle_that_is_not_a_file_is_a_tls_error_before_anything_is_sent(mock, tmp_path) -> None:
    """ca_bundle naming no file: kind tls, the server named, the path not quoted, nothing sent."""
    missing = tmp_path / "secret-path" / "ca.pem"
    report = McpClient(connection=ConnectionSettings(ca_bundle=str(missing))).ping(
        Endpoint(identifier="trust", url="https://93.184.216.34/mcp")
    )
    assert len(mock.calls) == 0
    assert report.failure is not None and report.failure.kind == "tls"
    assert "'trust'" in report.error and "NR_LLM_MCP_CA_BUNDLE" in report.error
    assert "secret-path" not in report.error


def test_the_oauth_legs_use_the_same_trust(mock, tmp_path) -> None:
    """OAuthLegs(ca_bundle=...) goes through the same machine: the same tls error, naming its endpoint."""
    legs = OAuthLegs(
        "demo",
        OperationDeadline(10, FakeClock(), "demo"),
        ConnectionSettings(
            allow_private_networks=False,
            resolver=lambda host, port: ["93.184.216.34"],
            ca_bundle=str(tmp_path / "missing.pem"),
        ),
    )
    with legs, pytest.raises(Exception) as caught:
        legs.get("https://auth.test/.well-known/oauth-authorization-server", "authorization server metadata")
    assert getattr(caught.value, "kind", None) == "tls" and "authorization server metadata" in str(
        caught.value
    )
    assert len(mock.calls) == 0


def test_a_client_takes_its_connection_whole() -> None:
    """McpClient(connection=...) keeps the value it is given; without one, the defaults: public
    addresses only, certifi's authorities."""
    whole = ConnectionSettings(allow_private_networks=True, keepalive_seconds=0)
    assert McpClient(connection=whole).connection is whole
    assert McpClient().connection == ConnectionSettings()
    assert (ConnectionSettings().allow_private_networks, ConnectionSettings().ca_bundle) == (False, None)
