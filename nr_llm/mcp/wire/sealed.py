"""Secrets held in plain data: request headers and bodies, token answers, forms.

An error reporter that records a traceback's local variables (Sentry does by default)
prints each one's ``repr``; a dict holding a token, or the bytes of a form carrying a
client secret, would print the secret. These types behave as what they wrap and show
only their shape, so a leg that fails leaves no secret readable in the frames it fails
through (the leg machine's, the OAuth legs', the client's). Sentry walks a mapping item by
item rather than calling its ``repr``, unless the object offers ``__sentry_repr__``: both types
offer it.
"""

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
