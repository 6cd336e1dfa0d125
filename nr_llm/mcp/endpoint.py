"""Where an operation goes and how it authenticates: a value, built per operation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from .oauth import OAuthSettings

AuthPlacement = Literal["none", "bearer", "header"]


@dataclass(frozen=True)
class Endpoint:
    identifier: str
    url: str
    budget_seconds: float = 20.0
    # Kept out of repr (and so out of every log line or traceback that formats one).
    credential: str | None = field(default=None, repr=False)
    auth_placement: AuthPlacement = "none"
    auth_header_name: str = ""
    # Why a configured credential could not be resolved; the client fails closed with it.
    credential_problem: str = ""
    # OAuth 2.1 (MCP authorization): the bearer token comes from here, not from ``credential``.
    oauth: OAuthSettings | None = field(default=None, repr=False)

    @property
    def needs_credential(self) -> bool:
        return self.auth_placement in ("bearer", "header")
