"""Every ``NR_LLM_*`` setting the code reads has a row in docs/settings.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# A read of a setting: getattr(settings, "NR_LLM_X", ...) or settings.NR_LLM_X, in the package.
READ = re.compile(
    r"""getattr\(\s*\w*settings\s*,\s*["'](NR_LLM_[A-Z0-9_]+)["']|settings\.(NR_LLM_[A-Z0-9_]+)"""
)


def read_in_code() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "nr_llm").rglob("*.py"):
        for match in READ.finditer(path.read_text()):
            found.add(match.group(1) or match.group(2))
    return found


def test_the_code_reads_the_settings_this_test_knows_of() -> None:
    """The pattern still finds the reads (a rename of conf's access would silently find none)."""
    assert {"NR_LLM_MCP_OPERATION_TIMEOUT", "NR_LLM_TURN_MAX_CALLS", "NR_LLM_CACHE"} <= read_in_code()


def test_every_setting_read_in_code_has_a_row() -> None:
    page = (ROOT / "docs" / "settings.md").read_text()
    rows = set(re.findall(r"^\| `(NR_LLM_[A-Z0-9_]+)` \|", page, re.MULTILINE))
    assert read_in_code() - rows == set()
