"""Types whose repr shows only their shape, so an error reporter never prints a secret."""

from __future__ import annotations

from typing import Any


class Sealed(dict[str, Any]):
    """A dict whose repr names its keys, never its values."""

    def __repr__(self) -> str:
        return f"Sealed({', '.join(sorted(self))})"

    __str__ = __sentry_repr__ = __repr__


class SealedBytes(bytes):
    """Bytes (a request body) whose repr gives their length, never their content."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"SealedBytes({len(self)} bytes)"

    __str__ = __sentry_repr__ = __repr__
