"""Every sync function of ``nr_llm.resources`` and ``nr_llm.prompts`` has its async twin (the
``a`` prefix) with the same parameters: names, order, kinds, defaults and annotations, and the
same return annotation. A parameter added to one and not the other fails here."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from nr_llm import prompts, resources

#: Left sync on purpose: ``messages_for`` is pure (shapes a prompt's messages), and
#: ``remember_links`` only sets cache keys, called where a tool's result is made (on its thread).
NO_TWIN = {"messages_for", "remember_links"}


def _functions(module: ModuleType) -> dict[str, Callable[..., Any]]:
    return {
        name: getattr(module, name)
        for name in module.__all__
        if inspect.isfunction(getattr(module, name)) and name not in NO_TWIN
    }


@pytest.mark.parametrize("module", [resources, prompts], ids=lambda module: module.__name__)
def test_every_sync_function_has_an_async_twin_with_its_parameters(module: ModuleType) -> None:
    functions = _functions(module)
    sync = {name for name, function in functions.items() if not inspect.iscoroutinefunction(function)}
    twins = {name for name, function in functions.items() if inspect.iscoroutinefunction(function)}
    assert sync and NO_TWIN.isdisjoint(twins), module
    assert twins == {f"a{name}" for name in sync}, (sync, twins)
    for name in sorted(sync):
        mine, twin = inspect.signature(functions[name]), inspect.signature(functions[f"a{name}"])
        assert list(twin.parameters.values()) == list(mine.parameters.values()), name
        assert twin.return_annotation == mine.return_annotation, name
