import pytest
from django.test import override_settings

from nr_llm.conf import conf


@pytest.mark.parametrize("raw", [None, "", "  ", "abc", 0, -1, "0", "-3", float("nan"), float("inf"), True])
def test_unusable_operation_timeout_falls_back_to_twenty(raw):
    """Empty, non-numeric or non-positive budgets fall back to 20 s (seed 000, decision 5)."""
    with override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=raw):
        assert conf.MCP_OPERATION_TIMEOUT == 20.0


@pytest.mark.parametrize(("raw", "expected"), [(45, 45.0), ("7.5", 7.5), (600, 600.0), (0.2, 0.2)])
def test_usable_operation_timeout_is_taken_without_upper_clamp(raw, expected):
    """A positive number is used as given: no upper clamp (the wait is the operator's choice)."""
    with override_settings(NR_LLM_MCP_OPERATION_TIMEOUT=raw):
        assert expected == conf.MCP_OPERATION_TIMEOUT


def test_settings_are_read_at_call_time():
    """Nothing is captured at import: override_settings changes what conf returns."""
    with override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True):
        assert conf.MCP_ALLOW_PRIVATE_NETWORKS is True
    with override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=False):
        assert conf.MCP_ALLOW_PRIVATE_NETWORKS is False


def test_truthy_non_boolean_does_not_open_private_networks():
    """Only a real True opens the SSRF guard; the string 'false' must not."""
    with override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS="false"):
        assert conf.MCP_ALLOW_PRIVATE_NETWORKS is False


def test_request_events_default_excludes_cancellations():
    """Structured cancellation rows are opt-in (seed 003)."""
    assert conf.REQUEST_EVENTS == {"include_cancelled": False}
