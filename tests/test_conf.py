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


@pytest.mark.parametrize(("raw", "expected"), [(0, 0.0), ("0", 0.0), (120, 120.0), ("30.5", 30.5)])
def test_era_cache_lifetime_takes_zero_and_positive_numbers(raw, expected):
    """0 means "probe every operation"; a positive number is the lifetime in seconds."""
    with override_settings(NR_LLM_MCP_ERA_CACHE_SECONDS=raw):
        assert expected == conf.MCP_ERA_CACHE_SECONDS


@pytest.mark.parametrize("raw", [None, "", "soon", -1, float("nan"), True])
def test_unusable_era_cache_lifetime_falls_back_to_ten_minutes(raw):
    """Empty, non-numeric or negative: the default 600 s."""
    with override_settings(NR_LLM_MCP_ERA_CACHE_SECONDS=raw):
        assert conf.MCP_ERA_CACHE_SECONDS == 600.0


def test_the_app_client_gets_the_configured_era_lifetime():
    """mcp_client() passes the setting into the Django-free client."""
    from nr_llm.servers.endpoints import mcp_client

    with override_settings(NR_LLM_MCP_ERA_CACHE_SECONDS=42):
        assert mcp_client().era_cache_seconds == 42.0


@pytest.mark.parametrize(("raw", "expected"), [(0, 0.0), ("0", 0.0), (4, 4.0), ("50.5", 50.5)])
def test_keepalive_takes_zero_and_positive_numbers(raw, expected):
    """NR_LLM_MCP_KEEPALIVE_SECONDS: 0 turns connection reuse off; a positive number is the idle limit."""
    with override_settings(NR_LLM_MCP_KEEPALIVE_SECONDS=raw):
        assert expected == conf.MCP_KEEPALIVE_SECONDS


@pytest.mark.parametrize("raw", [None, "", "forever", -1, float("nan"), True])
def test_unusable_keepalive_falls_back_to_one_and_a_half_seconds(raw):
    """Empty, non-numeric or negative: the default 1.5 s (below gunicorn's 2 s keep-alive)."""
    with override_settings(NR_LLM_MCP_KEEPALIVE_SECONDS=raw):
        assert conf.MCP_KEEPALIVE_SECONDS == 1.5


def test_the_app_client_gets_the_configured_keepalive():
    """mcp_client() passes the idle limit into the Django-free client."""
    from nr_llm.servers.endpoints import mcp_client

    with override_settings(NR_LLM_MCP_KEEPALIVE_SECONDS=0):
        assert mcp_client().connection.keepalive_seconds == 0.0


def test_the_connection_settings_are_one_value_built_from_the_settings(tmp_path):
    """conf.MCP_CONNECTION carries the private-network policy, the CA bundle and the idle
    limit as one frozen value, and the app's client and OAuth legs get exactly that value."""
    from nr_llm.authorization.service import _legs
    from nr_llm.mcp import ConnectionSettings
    from nr_llm.models import McpServer
    from nr_llm.servers.endpoints import mcp_client

    bundle = str(tmp_path / "ca.pem")
    with override_settings(
        NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True, NR_LLM_MCP_CA_BUNDLE=bundle, NR_LLM_MCP_KEEPALIVE_SECONDS=3
    ):
        expected = ConnectionSettings(allow_private_networks=True, ca_bundle=bundle, keepalive_seconds=3.0)
        assert expected == conf.MCP_CONNECTION
        assert mcp_client().connection == expected
        assert _legs(McpServer(identifier="demo", url="https://mcp.example/mcp")).connection == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, None), ("", None), ("/etc/site/ca.pem", "/etc/site/ca.pem"), (["/etc/site/ca.pem"], None)],
)
def test_the_ca_bundle_is_a_path_or_none(raw, expected):
    """NR_LLM_MCP_CA_BUNDLE: a path is taken as given; unset, empty or not a path keeps requests' trust."""
    with override_settings(NR_LLM_MCP_CA_BUNDLE=raw):
        assert expected == conf.MCP_CA_BUNDLE
