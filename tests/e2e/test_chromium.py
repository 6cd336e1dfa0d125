"""The browser tests' gate: Chromium renders a page; without it a run fails, or skips loudly when allowed.

The gate is checked from outside, as `make test` meets it: pytest in a subprocess, pointed at
a Chromium that is not there.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.chromium import ALLOW_SKIP, INSTALL_COMMAND, chromium_page
from tests.peers import ROOT

pytestmark = pytest.mark.e2e

SMOKE = "tests/e2e/test_chromium.py::test_chromium_renders_a_page"
RUN_SECONDS = 120


def test_chromium_renders_a_page(tmp_path: Path) -> None:
    """Debian's Chromium starts headless and renders a page (the smallest browser test)."""
    with chromium_page(tmp_path / "profile", width=400, height=300) as page:
        page.set_content("<p id='x'>rendered</p>")
        assert page.locator("#x").inner_text() == "rendered"


def _run_without_chromium(tmp_path: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """The smoke test in a pytest of its own whose Chromium is missing (SQLite, no shared database)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DATABASE_URL", ALLOW_SKIP) and not name.startswith("PYTEST")
    }
    env.update(NR_LLM_CHROMIUM=str(tmp_path / "no-chromium"), **extra)
    return subprocess.run(
        [sys.executable, "-m", "pytest", SMOKE, "-q", "-p", "no:randomly"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )


def test_a_run_without_chromium_fails_and_says_how_to_install_it(tmp_path: Path) -> None:
    """Not a green run: the browser test errors, naming the install command and the variable that
    would allow skipping."""
    run = _run_without_chromium(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"install it with: {INSTALL_COMMAND}" in run.stdout
    assert f"set {ALLOW_SKIP}=1 to skip the browser tests" in run.stdout
    assert "BROWSER TESTS SKIPPED" not in run.stdout


def test_an_allowed_skip_is_green_and_the_runs_last_line_says_what_was_skipped(tmp_path: Path) -> None:
    """With the variable the run passes, and its last line names each skipped browser test and
    the one command that installs Chromium."""
    run = _run_without_chromium(tmp_path, **{ALLOW_SKIP: "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    last = run.stdout.strip().splitlines()[-1]
    assert last == (
        f"BROWSER TESTS SKIPPED (1, {ALLOW_SKIP}=1): {SMOKE}. "
        f"The admin was not tested in a browser; install Chromium with: {INSTALL_COMMAND}"
    ), run.stdout
