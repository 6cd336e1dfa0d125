"""Seal a token or registration answer at once, so no frame of ours holds it readable."""

from __future__ import annotations

from ..wire.sealed import Sealed
from .legs import Answer

__all__ = ["Sealed", "sealed"]


def sealed(answer: Answer) -> tuple[int, Sealed]:
    """The status and body of ``answer``, the body sealed (an empty one when it was not JSON)."""
    return answer.status, Sealed(answer.body or {})
