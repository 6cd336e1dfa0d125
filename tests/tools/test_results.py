"""ToolResult: its status and ``is_error`` never disagree."""

from __future__ import annotations

import pytest

from nr_llm.tools import ToolResult


def test_an_error_result_that_says_it_succeeded_is_refused() -> None:
    """An error built without a status is not quietly made a failure: it is refused where it is
    built, so a loop branching on status and a provider reading is_error never read two answers."""
    with pytest.raises(ValueError, match="status"):
        ToolResult("boom", True, "demo")
    assert ToolResult("boom", True, "demo", "failed").status == "failed"
    assert ToolResult("ok", False, "demo").status == "succeeded"
