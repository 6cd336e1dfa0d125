"""The data-class ceiling (see the glossary). A data class this version does not know ranks
above every ceiling, so it is never let through unjudged."""

from __future__ import annotations

from ..conf import conf
from ..models import DataClass

#: Least to most sensitive.
ORDER: tuple[str, ...] = (
    DataClass.PUBLIC_CONTENT,
    DataClass.EDITOR_CONTENT,
    DataClass.SOURCE_CODE,
    DataClass.INTERNAL_CONFIGURATION,
    DataClass.SYSTEM_DIAGNOSTICS,
    DataClass.SECRET_ADJACENT,
)


def resolve(ceiling: str | None) -> str:
    """The caller's ceiling, else ``NR_LLM_DATA_CLASS_CEILING``; ``ValueError`` for a typo."""
    if ceiling is None:
        return conf.DATA_CLASS_CEILING
    if ceiling not in ORDER:
        raise ValueError(f"data_class_ceiling must be one of {', '.join(ORDER)}, not {ceiling!r}")
    return str(ceiling)


def allows(ceiling: str, data_class: str) -> bool:
    """Whether a server declared ``data_class`` is within ``ceiling`` (both as stored)."""
    return data_class in within(ceiling)


def within(ceiling: str) -> tuple[str, ...]:
    """The data classes ``ceiling`` lets through, for a query filter."""
    return ORDER[: ORDER.index(ceiling) + 1] if ceiling in ORDER else ()


def label(data_class: str) -> str:
    return DataClass(data_class).label if data_class in DataClass.values else data_class
