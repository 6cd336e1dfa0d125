"""Sealed values: what an error reporter records of a frame's locals shows no secret."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nr_llm.mcp.wire.sealed import Sealed, SealedBytes


def _as_sentry_records(value: Any) -> Any:
    """What Sentry's serializer does with a local (sentry_sdk/serializer.py): an object's own
    ``__sentry_repr__`` first, else a mapping walked key by key, else ``repr``."""
    if hasattr(value, "__sentry_repr__"):
        return value.__sentry_repr__()
    if isinstance(value, Mapping):
        return {key: _as_sentry_records(item) for key, item in value.items()}
    return repr(value)


def test_a_sealed_header_map_is_not_walked_into_by_a_reporter():
    """A dict subclass is walked item by item unless it speaks for itself: the token must not show."""
    headers = Sealed({"Authorization": "Bearer tok-123", "Accept": "application/json"})
    recorded = str(_as_sentry_records({"headers": headers}))
    assert "tok-123" not in recorded and "Authorization" in recorded


def test_sealed_bytes_show_their_length_only():
    body = SealedBytes(b"client_secret=s3cret")
    assert _as_sentry_records(body) == "SealedBytes(20 bytes)" == repr(body) == str(body)
