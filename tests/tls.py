"""TLS for the tests, as the internet looks: names, a certificate authority, certificates.

``tls`` (session fixture, registered in tests/conftest.py) is a test CA made by trustme for
this run, whose PEM file the client is told to trust (``ca_bundle``), and certificates it
issues per name. ``NAMES`` maps the names the tests use to loopback through the client's
resolver seam (``ConnectionSettings(resolver=...)``): nothing patches ``socket``, and the URL's host
stays the name, which is what the client must send as SNI and verify the certificate for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import trustme

from nr_llm.mcp import ConnectionSettings, McpClient
from tests.peers import running
from tests.peers.named import named_session

# The test names and what they resolve to (RFC 6761 reserves .test for exactly this).
NAMES: dict[str, list[str]] = {
    "mcp.test": ["127.0.0.1"],
    "auth.test": ["127.0.0.1"],
    "impostor.test": ["127.0.0.1"],
    # The first address refuses the connection (nothing listens on 127.0.0.2); the second answers.
    "two.test": ["127.0.0.2", "127.0.0.1"],
}


def resolve_test_names(host: str, port: int) -> Sequence[str]:
    """A resolver for the client: the test names from ``NAMES``, any other name refused."""
    try:
        return NAMES[host]
    except KeyError:
        raise OSError(f"no such test name: {host}") from None


def tls_client(authority: TestAuthority, **kwargs: Any) -> McpClient:
    """The client facing a peer by name: the test names resolved, the test CA trusted.
    Keywords that are parts of ``ConnectionSettings`` (``keepalive_seconds``) go there."""
    parts = {field.name for field in dataclasses.fields(ConnectionSettings)}
    settings = {name: kwargs.pop(name) for name in list(kwargs) if name in parts}
    return McpClient(
        connection=ConnectionSettings(
            allow_private_networks=True,
            resolver=resolve_test_names,
            ca_bundle=str(authority.bundle),
            **settings,
        ),
        **kwargs,
    )


@dataclasses.dataclass(frozen=True)
class CertFiles:
    certfile: Path
    keyfile: Path


class TestAuthority:
    """A CA of this test session, and the certificates it issued (files in ``directory``)."""

    __test__ = False  # not a test class, whatever its name says to pytest

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.ca = trustme.CA()
        self.bundle = directory / "ca.pem"
        self.ca.cert_pem.write_to_path(str(self.bundle))
        self._issued: dict[tuple[Any, ...], CertFiles] = {}

    def issue(self, *names: str, expired: bool = False, ca: trustme.CA | None = None) -> CertFiles:
        """A certificate for ``names`` (host names or IP addresses), kept for the session."""
        key = (names, expired, id(ca))
        if key not in self._issued:
            now = datetime.datetime.now(datetime.UTC)
            issuer = ca or self.ca
            if expired:
                day = datetime.timedelta(days=1)
                cert = issuer.issue_cert(*names, not_before=now - 30 * day, not_after=now - day)
            else:
                cert = issuer.issue_cert(*names)
            stem = f"{len(self._issued)}-{'-'.join(names)}"
            files = CertFiles(self.directory / f"{stem}.crt", self.directory / f"{stem}.key")
            files.certfile.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
            cert.private_key_pem.write_to_path(str(files.keyfile))
            self._issued[key] = files
        return self._issued[key]

    def untrusted(self, *names: str) -> CertFiles:
        """A certificate for ``names`` from another CA, which nobody was told to trust."""
        if not hasattr(self, "_stranger"):
            self._stranger = trustme.CA()
        return self.issue(*names, ca=self._stranger)


@pytest.fixture(scope="session")
def tls() -> Iterator[TestAuthority]:
    with tempfile.TemporaryDirectory(prefix="nr-llm-tls-") as directory:
        yield TestAuthority(Path(directory))


@contextlib.contextmanager
def sdk_server_tls(authority: TestAuthority, name: str, *args: str) -> Iterator[str]:
    """The official SDK server over https with a certificate for ``name``; yields its /mcp URL
    by that name (https://NAME:PORT/mcp). ``server_names(url)`` reads the SNI it saw."""
    files = authority.issue(name)
    command = [
        sys.executable,
        "-m",
        "tests.peers.sdk_server",
        "--certfile",
        str(files.certfile),
        "--keyfile",
        str(files.keyfile),
        "--allow-host",
        name,
        *args,
    ]
    with running(command) as port:
        yield f"https://{name}:{port}/mcp"


def names_session(authority: TestAuthority) -> requests.Session:
    """Plain requests reaching the test names over https, trusting the test CA (tests/peers/named.py)."""
    return named_session({name: addresses[-1] for name, addresses in NAMES.items()}, str(authority.bundle))


def peer_log(url: str, authority: TestAuthority, path: str) -> Any:
    """GET ``path`` of a TLS SDK peer (its /requests or /sni log), by its name."""
    parts = urlsplit(url)
    with names_session(authority) as session:
        answer = session.get(f"https://{parts.netloc}{path}", timeout=10)
    answer.raise_for_status()
    return answer.json()


@contextlib.contextmanager
def tls_adversary(files: CertFiles | None = None, *flags: str) -> Iterator[tuple[int, Path]]:
    """tests/peers/adversarial.py over TLS with ``files`` (or a raw TLS misbehaviour such as
    ``--tls-stall``); yields its port and the log of what reached it (see log_entries)."""
    with tempfile.TemporaryDirectory(prefix="nr-llm-tls-peer-") as directory:
        log = Path(directory) / "log.jsonl"
        log.touch()
        command = [sys.executable, "-m", "tests.peers.adversarial", *flags]
        if files is not None:
            command += ["--certfile", str(files.certfile), "--keyfile", str(files.keyfile), "--log", str(log)]
        with running(command) as port:
            yield port, log


def log_entries(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
