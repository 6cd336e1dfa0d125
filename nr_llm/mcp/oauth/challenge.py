"""The ``WWW-Authenticate`` challenge of a 401/403 (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

Only the Bearer challenge is read, or where there is none the DPoP one (RFC 9449 §7.1, same
parameters); a header may carry several challenges (``Basic`` too) and a naive
``key=value`` search would take a parameter from the wrong one.
Everything parsed here is attacker input: the values are kept as strings for the caller
to vet (the metadata URL goes through the same gate as any other URL) and are never
trusted to select behaviour beyond what the specification allows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..wire.errors import ChallengeError
from .dpop import server_nonce

# token68 / token characters (RFC 9110 §5.6.2), and a quoted string with backslash escapes.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_SCANNER = re.compile(
    rf"""\s*(?:
        (?P<comma>,)
      | (?P<name>{_TOKEN})\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>{_TOKEN}))
      | (?P<scheme>{_TOKEN})(?:\s+(?P<token68>[A-Za-z0-9._~+/-]+=*)(?=\s*(?:,|$)))?
    )""",
    re.VERBOSE,
)
# A header longer than this is not a challenge a server needs; it is not parsed at all.
MAX_HEADER_CHARS = 8192


@dataclass(frozen=True)
class Challenge:
    error: str | None = None
    # None: no scope parameter at all, which is not the same as an empty one.
    scopes: tuple[str, ...] | None = None
    resource_metadata: str | None = None
    error_description: str | None = None


def parse_challenge(header: str | None) -> Challenge:
    """The Bearer challenge's parameters; an absent, foreign or unparseable header is empty."""
    params = _bearer_params(header or "")
    scope = params.get("scope")
    return Challenge(
        error=params.get("error") or None,
        scopes=None if scope is None else tuple(dict.fromkeys(scope.split())),
        resource_metadata=params.get("resource_metadata") or None,
        error_description=params.get("error_description"),
    )


def _bearer_params(header: str) -> dict[str, str]:
    if len(header) > MAX_HEADER_CHARS:
        return {}
    challenges: list[tuple[str, dict[str, str]]] = []
    position = 0
    while position < len(header):
        match = _SCANNER.match(header, position)
        if match is None or match.end() == position:
            break  # not a header we can read: what was read so far stands
        position = match.end()
        if match["comma"]:
            continue
        if match["name"] is not None and challenges:
            value = match["quoted"] if match["quoted"] is not None else match["bare"]
            if match["quoted"] is not None:
                value = re.sub(r"\\(.)", r"\1", value)
            # The first occurrence wins: a repeated parameter is not a way to override one.
            challenges[-1][1].setdefault(match["name"].lower(), value)
        elif match["scheme"] is not None:
            challenges.append((match["scheme"].lower(), {}))
    for wanted in ("bearer", "dpop"):
        for scheme, params in challenges:
            if scheme == wanted:
                return params
    return {}


class NonceChallenge(ChallengeError):
    """A 401 whose server wants a DPoP proof with its nonce (RFC 9449 §9): refused before it ran."""

    def __init__(
        self,
        server: str,
        message: str,
        *,
        status: int,
        nonce: str,
        error: str | None,
        resource_metadata: str | None,
    ) -> None:
        super().__init__(server, message, status=status, error=error, resource_metadata=resource_metadata)
        self.nonce = nonce


def challenge_error(server: str, status: int, headers: Mapping[str, str]) -> ChallengeError:
    """The typed refusal of a 401/403 answer, from its ``WWW-Authenticate`` and ``DPoP-Nonce``."""
    challenge = parse_challenge(headers.get("WWW-Authenticate"))
    message = f"MCP server {server!r} refused the request (HTTP {status}): check its credential."
    nonce = server_nonce(headers.get("DPoP-Nonce"))
    if status == 401 and challenge.error == "use_dpop_nonce" and nonce is not None:
        return NonceChallenge(
            server,
            message,
            status=status,
            nonce=nonce,
            error=challenge.error,
            resource_metadata=challenge.resource_metadata,
        )
    return ChallengeError(
        server,
        message,
        status=status,
        error=challenge.error,
        scopes=challenge.scopes,
        resource_metadata=challenge.resource_metadata,
    )
