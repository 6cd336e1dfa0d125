"""The fingerprint a pinned definition (a tool's, a resource's, a prompt's) is compared by."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def fingerprint(definition: dict[str, Any]) -> str:
    """SHA-256 of ``definition`` as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
