"""Real peers the tests start on 127.0.0.1: each prints ``PORT <n>`` once it listens.

Every process is started on an OS-chosen port, waited for with a bound, and stopped by
the test that started it.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
#: What features_server's ``verify`` asks a person to open: a scheme a page must never make a
#: live link. Here, not in that server's module: importing it in a test would replace this
#: package's ``sdk_server`` function with the module of that name.
VERIFY_URL = "javascript:alert(document.domain)//https://example.invalid/verify"


@contextlib.contextmanager
def running(
    command: Sequence[str], *, startup_seconds: float = 30.0, env: dict[str, str] | None = None
) -> Iterator[int]:
    """Start ``command``, yield the port it announces, stop it afterwards."""
    with spawned(command, env=env) as process:
        yield announced_port(process, startup_seconds)


@contextlib.contextmanager
def spawned(
    command: Sequence[str], *, env: dict[str, str] | None = None, pass_fds: Sequence[int] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``command`` without waiting for it (see announced_port), stop it afterwards.

    For peers started side by side: start each, then wait for each.
    """
    process = subprocess.Popen(
        list(command),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=None,
        env={**os.environ, **(env or {})},
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


def announced_port(process: subprocess.Popen[bytes], seconds: float) -> int:
    """The port in the ``PORT <n>`` line the process prints, waited for at most ``seconds``."""
    assert process.stdout is not None
    deadline = time.monotonic() + seconds
    buffer = b""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"peer {process.args!r} exited with {process.returncode} before listening")
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            buffer += chunk
            for line in buffer.splitlines():
                if line.startswith(b"PORT "):
                    return int(line.split()[1])
    raise RuntimeError(f"peer {process.args!r} did not announce a port within {seconds:g} s")


@contextlib.contextmanager
def sdk_server(*args: str) -> Iterator[str]:
    """The official Python SDK server (tests/peers/sdk_server.py); yields its /mcp URL."""
    with running([sys.executable, "-m", "tests.peers.sdk_server", *args]) as port:
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.contextmanager
def pydantic_server(*args: str) -> Iterator[str]:
    """The twelve pydantic signatures served by the SDK (or ``--fastmcp``); yields its /mcp URL."""
    with running([sys.executable, "-m", "tests.peers.pydantic_server", *args]) as port:
        yield f"http://127.0.0.1:{port}/mcp"
