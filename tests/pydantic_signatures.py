"""Twelve everyday tool signatures as a Python (pydantic) MCP server writes them, with instances.

Each function is a tool of ``tests/peers/pydantic_server.py`` (the official SDK's ``MCPServer``,
or ``fastmcp``): nested models, ``list[Model]``, ``Optional``, ``Literal``, ``Enum``,
``dict[str, Model]``, tuples, a discriminated union and a recursive model. The SDKs write most
of them through ``$defs``/``$ref``. ``INSTANCES`` holds, per tool, arguments the server accepts
and arguments it refuses, for comparing the offered schema's verdict with the server's.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str
    postcode: str | None = None


class Person(BaseModel):
    name: str = Field(description="Full name")
    age: int = Field(ge=0, le=150)
    address: Address


class Item(BaseModel):
    sku: str
    quantity: int = 1


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Node(BaseModel):
    label: str
    children: list[Node] = []


def greet(name: str, shout: bool = False) -> str:
    """Greet someone by name."""
    return name


def add_person(person: Person) -> str:
    """Store a person with a nested address."""
    return person.name


def order(items: list[Item], note: str | None = None) -> str:
    """Place an order of several items."""
    return str(len(items))


def search(query: str, limit: int | None = None) -> str:
    """Search with an optional limit."""
    return query


def sort_by(direction: Literal["asc", "desc"]) -> str:
    """Sort ascending or descending."""
    return direction


def paint(colour: Colour) -> str:
    """Paint in one of the colours."""
    return colour.value


def index_people(people: dict[str, Person]) -> str:
    """Index people by a key of the caller's choosing."""
    return ",".join(sorted(people))


def move(point: tuple[int, int]) -> str:
    """Move to a point given as (x, y)."""
    return str(point)


def adopt(pet: Annotated[Cat | Dog, Field(discriminator="kind")]) -> str:
    """Adopt a cat or a dog."""
    return pet.kind


def walk(tree: Node) -> str:
    """Walk a tree of labelled nodes."""
    return tree.label


def maybe_person(person: Person | None = None) -> str:
    """Optionally describe a person."""
    return "" if person is None else person.name


def tag(tags: list[Colour], weights: dict[str, float] | None = None) -> str:
    """Tag with colours and optional weights."""
    return ",".join(tag.value for tag in tags)


SIGNATURES = (
    greet,
    add_person,
    order,
    search,
    sort_by,
    paint,
    index_people,
    move,
    adopt,
    walk,
    maybe_person,
    tag,
)

_PERSON = {"name": "Ada", "age": 36, "address": {"street": "1 Way", "city": "London"}}

#: Per tool: (arguments the server accepts, arguments it refuses).
INSTANCES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "greet": ([{"name": "a"}, {"name": "a", "shout": True}], [{}, {"name": 3}]),
    "add_person": (
        [
            {"person": _PERSON},
            {"person": {**_PERSON, "address": {"street": "s", "city": "c", "postcode": None}}},
        ],
        [{"person": {**_PERSON, "age": -1}}, {"person": {**_PERSON, "address": {"street": "s"}}}, {}],
    ),
    "order": (
        [{"items": [{"sku": "a"}, {"sku": "b", "quantity": 2}]}, {"items": [], "note": "x"}],
        [{"items": [{"quantity": 2}]}, {"items": "a"}],
    ),
    "search": ([{"query": "q"}, {"query": "q", "limit": 3}, {"query": "q", "limit": None}], [{"limit": 1}]),
    "sort_by": ([{"direction": "asc"}], [{"direction": "up"}, {}]),
    "paint": ([{"colour": "red"}], [{"colour": "blue"}, {"colour": 1}]),
    "index_people": ([{"people": {"a": _PERSON}}, {"people": {}}], [{"people": {"a": {"name": "x"}}}]),
    "move": ([{"point": [1, 2]}], [{"point": [1]}, {"point": [1, "a"]}, {"point": [1, 2, 3]}]),
    "adopt": (
        [{"pet": {"kind": "cat", "lives": 9}}, {"pet": {"kind": "dog", "good": True}}],
        [{"pet": {"kind": "cat", "good": True}}, {"pet": {"kind": "cow"}}],
    ),
    "walk": (
        [{"tree": {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}}],
        [{"tree": {"label": "a", "children": [{"children": []}]}}, {"tree": {"children": []}}],
    ),
    "maybe_person": ([{}, {"person": None}, {"person": _PERSON}], [{"person": {"name": "x"}}]),
    "tag": (
        [{"tags": ["red"]}, {"tags": [], "weights": {"a": 1.5}}],
        [{"tags": ["blue"]}, {"tags": ["red"], "weights": {"a": "x"}}],
    ),
}

_FULL_PERSON = {"name": "Ada", "age": 36, "address": {"street": "1 Way", "city": "London", "postcode": None}}

#: Arguments as a strict-mode model sends them (every property given), valid and not, for the
#: tools OpenAI's strict mode takes: compared with ``openai.pydantic_function_tool``'s verdict.
STRICT_INSTANCES: dict[str, list[dict[str, Any]]] = {
    "greet": [{"name": "a", "shout": False}, {"name": "a", "shout": None}, {"name": "a"}],
    "add_person": [{"person": _FULL_PERSON}, {"person": _PERSON}, {"person": {**_FULL_PERSON, "x": 1}}],
    "order": [
        {"items": [{"sku": "a", "quantity": 1}], "note": None},
        {"items": [{"sku": "a", "quantity": None}], "note": None},
        {"items": [{"sku": "a"}], "note": "n"},
    ],
    "search": [{"query": "q", "limit": None}, {"query": "q", "limit": 2}, {"query": "q"}],
    "sort_by": [{"direction": "asc"}, {"direction": None}],
    "paint": [{"colour": "green"}, {"colour": None}],
    "walk": [
        {"tree": {"label": "a", "children": [{"label": "b", "children": []}]}},
        {"tree": {"label": "a", "children": [{"label": "b"}]}},
    ],
    "maybe_person": [{"person": None}, {"person": _FULL_PERSON}, {}],
}


def arguments_model(function: Any) -> type[BaseModel]:
    """The pydantic model of ``function``'s arguments, as the SDKs build it to validate a call."""
    import inspect
    import typing

    from pydantic import create_model

    hints = typing.get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (hints[name], default)
    model: type[BaseModel] = create_model(f"{function.__name__}Arguments", **fields)
    return model
