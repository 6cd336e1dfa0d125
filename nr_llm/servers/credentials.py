"""Credentials at rest: Fernet tokens under keys derived from settings.

The first key of ``NR_LLM_CREDENTIAL_KEYS`` (else ``SECRET_KEY``) encrypts; every key
decrypts, so rotation is: put the new key first, keep the old one after it, run
``manage.py mcp_rotate_credentials``, then drop the old key.
"""

from __future__ import annotations

import base64
import functools
import os
import re

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..conf import conf

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class CredentialUnavailable(Exception):
    """A configured credential cannot be turned back into its secret.

    The message says why (rotated key, unset variable) and never contains the secret.
    """


@functools.lru_cache(maxsize=16)
def _fernet(material: str) -> Fernet:
    # HKDF turns any operator-chosen string into a 32-byte key and separates this use
    # of SECRET_KEY from every other one Django makes. Kept per key material: a tool call
    # encrypts twice (its arguments, its answer), and deriving anew each time cost more
    # than the encryption (issue 26); a changed setting is a new material, so a new key.
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"nr_llm.credentials", info=b"fernet").derive(
        material.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


@functools.lru_cache(maxsize=16)
def _keyring_of(materials: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([_fernet(material) for material in materials])


def _keyring() -> MultiFernet:
    return _keyring_of(tuple(conf.CREDENTIAL_KEYS))


def encrypt(secret: str) -> str:
    return _keyring().encrypt(secret.encode()).decode("ascii")


def decrypt(token: str) -> str:
    try:
        return _keyring().decrypt(token.encode("ascii")).decode()
    except (InvalidToken, UnicodeError, ValueError) as exc:
        raise CredentialUnavailable(
            "the stored credential cannot be decrypted with the configured keys "
            "(was NR_LLM_CREDENTIAL_KEYS or SECRET_KEY changed without keeping the old key?)"
        ) from exc


def is_current(token: str) -> bool:
    """True when ``token`` is already under the first key: a rotation run again skips it."""
    try:
        _fernet(conf.CREDENTIAL_KEYS[0]).decrypt(token.encode("ascii"))
    except (InvalidToken, UnicodeError, ValueError):
        return False
    return True


def rotate(token: str) -> str:
    """Re-encrypt ``token`` under the first key."""
    try:
        return _keyring().rotate(token.encode("ascii")).decode("ascii")
    except (InvalidToken, UnicodeError, ValueError) as exc:
        raise CredentialUnavailable(
            "the stored credential cannot be decrypted with the configured keys"
        ) from exc


def from_environment(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        raise CredentialUnavailable(f"the environment variable {name} is not set")
    return value
