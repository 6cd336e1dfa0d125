"""Every sync function of the tool API and its ``a`` twin take the same parameters."""

from __future__ import annotations

import inspect

import pytest

from nr_llm import tools

TWINS = [name for name in tools.__all__ if name.startswith("a") and name[1:] in tools.__all__]


def test_the_tool_api_has_twins() -> None:
    assert {"aexecute", "aresume", "adefinitions", "aexecute_many"} <= set(TWINS)


@pytest.mark.parametrize("twin", TWINS)
def test_a_twin_takes_exactly_its_sync_functions_parameters(twin: str) -> None:
    """Names, kinds and defaults alike: a caller moving a view to async changes only the await."""

    def shape(function: object) -> list[tuple[str, object, object]]:
        parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
        return [(p.name, p.kind, p.default) for p in parameters]

    assert shape(getattr(tools, twin)) == shape(getattr(tools, twin[1:]))
