"""Where an operation goes and how it authenticates: a value, built per operation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..wire.redaction import masked_url

if TYPE_CHECKING:
    from ..oauth import OAuthSettings

AuthPlacement = Literal["none", "bearer", "header"]


@dataclass(frozen=True, repr=False)
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
    # Server text (an error's message, which often quotes the arguments) may be a span's status
    # description: the site's content capture allows this server's data class.
    capture_content: bool = False

    def __repr__(self) -> str:
        # The URL's query values masked (an API key travels there), the secrets left out.
        return (
            f"Endpoint(identifier={self.identifier!r}, url={masked_url(self.url)!r}, "
            f"budget_seconds={self.budget_seconds!r}, auth_placement={self.auth_placement!r}, "
            f"auth_header_name={self.auth_header_name!r}, credential_problem={self.credential_problem!r})"
        )

    @property
    def needs_credential(self) -> bool:
        return self.auth_placement in ("bearer", "header")
