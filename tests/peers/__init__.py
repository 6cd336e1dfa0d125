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


@contextlib.contextmanager
def running(
    command: Sequence[str], *, startup_seconds: float = 30.0, env: dict[str, str] | None = None
) -> Iterator[int]:
    """Start ``command``, yield the port it announces, stop it afterwards."""
    process = subprocess.Popen(
        list(command),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=None,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        yield _read_port(process, startup_seconds)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()


def _read_port(process: subprocess.Popen[bytes], seconds: float) -> int:
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
