"""The official MCP conformance suite against our client: each scenario passes with no
FAILURE and no WARNING (the suite's own "overall failed" rule), or is listed in
EXPECTED_TO_FAIL with the reason it cannot pass.

Both suite versions run: 0.1.16 for the handshake era as the suite shipped it, and
0.2.0-alpha.12 for the 2026-07-28 revision.
"""

from __future__ import annotations

import pytest

from tests.conformance.runner import run_scenario

pytestmark = pytest.mark.e2e

MODERN = "2026-07-28"
# (suite version, scenario, --spec-version)
SCENARIOS = [
    ("0.1.16", "initialize", None),
    ("0.1.16", "tools_call", None),
    ("0.1.16", "sse-retry", None),
    ("0.2.0-alpha.12", "tools_call", MODERN),
    ("0.2.0-alpha.12", "request-metadata", MODERN),
    ("0.2.0-alpha.12", "http-standard-headers", MODERN),
    ("0.2.0-alpha.12", "http-custom-headers", MODERN),
    ("0.2.0-alpha.12", "http-invalid-tool-headers", MODERN),
    ("0.2.0-alpha.12", "json-schema-ref-no-deref", MODERN),
    ("0.2.0-alpha.12", "json-schema-2020-12-preservation", MODERN),
    ("0.2.0-alpha.12", "sep-2322-client-request-state", MODERN),
]


@pytest.mark.parametrize(
    ("version", "scenario", "spec_version"),
    SCENARIOS,
    ids=[f"{version}-{scenario}" for version, scenario, _ in SCENARIOS],
)
def test_scenario_passes(version: str, scenario: str, spec_version: str | None) -> None:
    """The suite ran the scenario, recorded checks, none of them is a FAILURE or WARNING, and
    its overall verdict (which also fails a client that exits with an error) is a pass."""
    run = run_scenario(version, scenario, spec_version=spec_version)
    assert run.checks, f"the suite recorded no checks:\n{run.output[-4000:]}"
    assert not run.problems, run.explain()
    assert run.returncode == 0, run.explain()
