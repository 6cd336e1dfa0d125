"""Checking a message against a provider's published request type (the ``openai`` and ``anthropic``
packages' typed dicts), with no network."""

from __future__ import annotations

import functools
from typing import Any

from pydantic import TypeAdapter


def consumed(value: Any) -> Any:
    """pydantic validates ``Iterable`` fields lazily: walking the value runs every check."""
    if isinstance(value, dict):
        return {key: consumed(item) for key, item in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return [consumed(item) for item in value]


def assert_conforms(published: Any, value: Any) -> None:
    """``value`` validates as the provider's type, and nothing of it is dropped (a typed dict
    ignores an unknown key, so the validated value must equal the input)."""
    assert consumed(_adapter(published).validate_python(value)) == value


@functools.cache
def _adapter(published: Any) -> TypeAdapter[Any]:
    # Kept for the session: building one costs about a second, and the lazy iterators it returns
    # borrow its validators (pydantic-core panics when an adapter collected meanwhile took them).
    return TypeAdapter(published)
