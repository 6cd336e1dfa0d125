"""A PostgreSQL cluster of a test's own, to crash: ``initdb`` in a temporary directory, the
postmaster on a free port of 127.0.0.1, killed with SIGKILL and started again (crash recovery),
removed at the end. Never the machine's server on 5432.

PostgreSQL refuses to run as root: as root, the cluster's files and processes are the
``postgres`` OS user's (``runuser``); as anyone else, that user's own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 60.0


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian's layout), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    bin: Path
    data: Path
    port: int
    settings: Sequence[str]

    def _as_owner(self, command: Sequence[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = " ".join(f"-c {setting}" for setting in self.settings)
        subprocess.run(
            self._as_owner(
                [
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.data / "server.log"),
                    "-o",
                    f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data} {options}",
                    "-w",
                    "-t",
                    str(int(START_SECONDS)),
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=START_SECONDS + 10,
        )

    def psql(self, database: str, sql: str) -> str:
        """One statement's rows, ``|``-separated, through the psql client."""
        done = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-Atc", sql],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode:
            raise RuntimeError(f"psql failed: {done.stderr}")
        return done.stdout.strip()

    def postmaster(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def processes(self) -> dict[str, int]:
        """The postmaster's children by their title (``postgres: walwriter`` ...), pid."""
        parent = self.postmaster()
        found: dict[str, int] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
                title = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent:
                found[title] = int(stat.parent.name)
        return found

    def pid_of(self, role: str) -> int:
        """The pid of the child whose title names ``role`` (e.g. ``walwriter``)."""
        [pid] = [pid for title, pid in self.processes().items() if title.endswith(role)]
        return pid

    def crash(self) -> None:
        """SIGKILL to the postmaster and every process of the cluster at once: what was not on
        disk is gone, as after a power cut (nothing is flushed on the way down)."""
        victims = [self.postmaster(), *self.processes().values()]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        subprocess.run(
            self._as_owner([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )


@contextlib.contextmanager
def throwaway_cluster(settings: Sequence[str] = ()) -> Iterator[Cluster]:
    """initdb, start with ``settings`` (``name=value``), yield; stopped and removed afterwards."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("no PostgreSQL binaries under /usr/lib/postgresql (Debian: postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="nrllm-pg-"))
    try:
        data = folder / "data"
        cluster = Cluster(bin_dir, data, _free_port(), settings)
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres")
        subprocess.run(
            cluster._as_owner(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ]
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster.start()
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
