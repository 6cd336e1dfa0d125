"""The responder plumbing execute() is to use (tools/elicit.py)."""

from __future__ import annotations

import pytest

from nr_llm.mcp import ElicitationAnswer, Elicitor, McpTransportError
from nr_llm.tools.elicit import needs_input, responder_for


def test_a_callable_is_wrapped_and_an_input_responder_kept() -> None:
    wrapped = responder_for(lambda request: ElicitationAnswer.decline(), "srv")
    assert isinstance(wrapped, Elicitor) and wrapped.server == "srv"
    assert responder_for(wrapped, "other") is wrapped
    assert responder_for(None, "srv") is None
    with pytest.raises(TypeError):
        responder_for(42, "srv")


def test_needs_input_from_the_error_kind_or_an_unanswered_request() -> None:
    waiting = Elicitor(lambda request: None)
    assert not needs_input(waiting)
    waiting.result_for({"message": "When?"})
    assert needs_input(waiting)
    assert needs_input(None, McpTransportError("input_required", "srv", "asked"))
    assert not needs_input(None, McpTransportError("timeout", "srv", "slow"))
