"""Every sync function of the site's API (tools, resources, prompts) and its ``a`` twin take the
same parameters; ``execute_many`` takes ``execute``'s for every call, ``resume`` the ones that
still apply to a held call."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest

from nr_llm import prompts, resources, tools

MODULES = [tools, resources, prompts]
TWINS = [
    (module, name)
    for module in MODULES
    for name in module.__all__
    if name.startswith("a") and name[1:] in module.__all__ and callable(getattr(module, name))
]


def shape(function: object) -> list[tuple[str, object, object]]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return [(p.name, p.kind, p.default) for p in parameters]


def keywords(function: object) -> dict[str, object]:
    parameters = inspect.signature(function).parameters.values()  # type: ignore[arg-type]
    return {p.name: p.default for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_the_api_has_twins() -> None:
    names = {f"{module.__name__}.{name}" for module, name in TWINS}
    assert {
        "nr_llm.tools.aexecute",
        "nr_llm.tools.aresume",
        "nr_llm.tools.adefinitions",
        "nr_llm.tools.aexecute_many",
        "nr_llm.resources.aread",
        "nr_llm.resources.aavailable",
        "nr_llm.prompts.aget",
        "nr_llm.prompts.acomplete",
        "nr_llm.prompts.aavailable",
    } <= names


@pytest.mark.parametrize(("module", "twin"), TWINS, ids=[f"{m.__name__}.{n}" for m, n in TWINS])
def test_a_twin_takes_exactly_its_sync_functions_parameters(module: ModuleType, twin: str) -> None:
    """Names, kinds and defaults alike: a caller moving a view to async changes only the await."""
    assert shape(getattr(module, twin)) == shape(getattr(module, twin[1:]))


def test_execute_many_takes_executes_options_for_every_call() -> None:
    """Each call's own name, arguments and provider id come from the model's call."""
    assert keywords(tools.execute_many) == {
        name: default for name, default in keywords(tools.execute).items() if name != "tool_call_id"
    }


def test_resume_takes_executes_options_that_apply_to_a_held_call() -> None:
    """The actor, ceiling and responder were fixed when the call was held."""
    assert set(keywords(tools.resume)) == {"client", "clock", "tool_call_id"}
    assert set(keywords(tools.resume)) <= set(keywords(tools.execute))


def test_one_provider_type_everywhere() -> None:
    for function in (tools.definitions, tools.tool_messages, prompts.get):
        parameter = inspect.signature(function).parameters["provider"]
        assert parameter.annotation in ("Provider", tools.Provider)
    assert prompts.Provider is tools.Provider


def test_internal_types_are_not_the_tool_apis_face() -> None:
    assert not {"Format", "MessageFormat", "TurnCall", "LocalTool", "ToolFunction"} & set(tools.__all__)
