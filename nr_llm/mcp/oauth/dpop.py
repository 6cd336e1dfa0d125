"""DPoP (RFC 9449, MCP SEP-1932): a key of its own per grant, a fresh proof per request.

A DPoP-bound access token is useless without the private key that made its proofs, so a
stolen token alone acts for nobody. The key is made when a grant is obtained, kept with the
grant (encrypted at rest by the store, out of every repr), and used again for that grant's
refreshes. Each token request and each request to the MCP server carries a proof signed
for exactly that method and URL (and, towards the MCP server, the token's hash).

A server may demand a nonce (``use_dpop_nonce`` with a ``DPoP-Nonce`` header): the
request is sent again once with it. The refusal is a 400 from the token endpoint or a 401
from the MCP server, both before anything ran, so the retry sends nothing twice that was
taken; a server that keeps asking ends the operation instead of looping.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from functools import cached_property
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ..wire.errors import AuthorizationError

if TYPE_CHECKING:
    # Only a type: identity imports discovery, which imports the challenge parser, which imports this.
    from .identity import WallClock

ALGORITHM = "ES256"
# What the proof's header says it is (RFC 9449 §4.2).
PROOF_TYPE = "dpop+jwt"
# The error code of a server that wants a nonce (RFC 9449 §8, §9).
NONCE_ERROR = "use_dpop_nonce"
# A nonce is opaque, but it travels in a signed claim and comes from a remote party:
# visible ASCII of a sane length, or it is not used at all.
_NONCE = re.compile(r"[\x21-\x7e]{1,512}")


class DpopKey:
    """One grant's proof key: an EC P-256 private key in PEM (never in repr)."""

    __slots__ = ("__dict__", "pem")

    def __init__(self, pem: str) -> None:
        self.pem = pem

    def __repr__(self) -> str:
        return "<DpopKey>"

    @classmethod
    def generate(cls) -> DpopKey:
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cls(pem.decode("ascii"))

    @cached_property
    def _private(self) -> ec.EllipticCurvePrivateKey:
        key = serialization.load_pem_private_key(self.pem.encode("ascii"), password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
            raise ValueError("a DPoP key must be EC P-256")
        return key

    @cached_property
    def public_jwk(self) -> dict[str, str]:
        numbers = self._private.public_key().public_numbers()
        return {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64(numbers.x.to_bytes(32, "big")),
            "y": _b64(numbers.y.to_bytes(32, "big")),
        }

    def proof(
        self,
        method: str,
        url: str,
        wall: WallClock,
        *,
        access_token: str | None = None,
        nonce: str | None = None,
    ) -> str:
        """A proof for one request: ``htu`` is ``url`` without query or fragment (§4.2)."""
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method.upper(),
            "htu": target_uri(url),
            "iat": int(wall.time()),
        }
        if access_token is not None:
            # §4.2 "ath": binds the proof to the token it accompanies.
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": PROOF_TYPE, "jwk": self.public_jwk}
        return jwt.encode(claims, self._private, algorithm=ALGORITHM, headers=headers)


def usable_key(pem: str | None, server: str) -> DpopKey | None:
    """The stored key of a grant, or a typed error when it is not one we can sign with."""
    if not pem:
        return None
    key = DpopKey(pem)
    try:
        key.public_jwk  # noqa: B018 - loads and checks the key once, here
    except (ValueError, TypeError):
        raise AuthorizationError(
            "authorization_required",
            server,
            f"MCP server {server!r}: the DPoP key stored with its grant is unusable; "
            "it must be connected again.",
            reason="refresh_refused",
        ) from None
    return key


def server_nonce(value: object) -> str | None:
    """A ``DPoP-Nonce`` header's value when it is one we may put in a proof."""
    return value if isinstance(value, str) and _NONCE.fullmatch(value) else None


def target_uri(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def supports_es256(advertised: tuple[str, ...] | None) -> bool:
    """Whether an authorization server that lists its DPoP algorithms accepts ours (none listed: try)."""
    return advertised is None or ALGORITHM in advertised


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")
