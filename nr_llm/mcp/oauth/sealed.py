"""Secrets held in plain data: a token response, a token request's form and headers.

An error reporter that records a traceback's local variables (Sentry does by default)
prints each one's ``repr``; a dict holding a token would print the token. These types
show their keys only, and an ``Answer`` (whose repr shows its body) is unwrapped into one
at once, so no frame of ours holds a secret in a readable form.
"""

from __future__ import annotations

from typing import Any

from .legs import Answer


class Sealed(dict[str, Any]):
    """A dict whose repr names its keys, never its values."""

    def __repr__(self) -> str:
        return f"Sealed({', '.join(sorted(self))})"

    __str__ = __repr__


def sealed(answer: Answer) -> tuple[int, Sealed]:
    """The status and body of ``answer``, the body sealed (an empty one when it was not JSON)."""
    return answer.status, Sealed(answer.body or {})
