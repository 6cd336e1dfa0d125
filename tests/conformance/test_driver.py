"""The conformance driver's own plumbing: scenario dispatch, example arguments, loopback URLs."""

from __future__ import annotations

import pytest

from tests.conformance import client
from tests.conformance.runner import SUITES, ScenarioRun


def test_every_listed_scenario_has_a_behaviour() -> None:
    """Each scenario the pytest module runs resolves to a registered behaviour."""
    from tests.conformance.test_conformance import SCENARIOS

    for _version, scenario, _spec in SCENARIOS:
        assert callable(client.behaviour_for(scenario))
    assert {version for version, _, _ in SCENARIOS} <= set(SUITES)


def test_prefix_behaviours_match_by_longest_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name ending in '/' serves every scenario under it; the longest prefix wins; an
    exact name beats any prefix."""

    def general(run: client.Run) -> None: ...
    def special(run: client.Run) -> None: ...
    def exact(run: client.Run) -> None: ...

    monkeypatch.setattr(client, "BEHAVIOURS", {"x/": general, "x/y/": special, "x/y/z": exact})
    assert client.behaviour_for("x/a") is general
    assert client.behaviour_for("x/y/b") is special
    assert client.behaviour_for("x/y/z") is exact
    with pytest.raises(LookupError, match="no behaviour"):
        client.behaviour_for("unknown")


def test_one_scenario_cannot_get_two_behaviours(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registering a second behaviour under a taken name is an error, not a silent override."""
    monkeypatch.setattr(client, "BEHAVIOURS", {})
    client.behaviour_of("a")(lambda run: None)
    with pytest.raises(ValueError, match="two behaviours"):
        client.behaviour_of("a")(lambda run: None)


def test_example_arguments_fill_required_properties_by_type() -> None:
    """Required properties get a plain value of their type; optional ones are left out."""
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["a", "b"],
    }
    assert client.example_arguments(schema) == {"a": 1, "b": "example"}
    assert client.example_arguments(None) == {}


def test_localhost_is_rewritten_to_ipv4_loopback() -> None:
    """The suite announces localhost; the driver dials 127.0.0.1, keeping port and path."""
    assert client.loopback("http://localhost:4321/mcp") == "http://127.0.0.1:4321/mcp"
    assert client.loopback("http://127.0.0.1:1/x") == "http://127.0.0.1:1/x"


def test_a_warning_is_a_problem_like_a_failure() -> None:
    """The runner counts WARNING as failing, as the suite's own overall verdict does."""
    run = ScenarioRun(
        checks=[{"status": "SUCCESS"}, {"status": "WARNING", "id": "w"}, {"status": "SKIPPED"}],
        returncode=1,
        output="",
    )
    assert [check["id"] for check in run.problems] == ["w"]
