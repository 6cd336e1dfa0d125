"""A throwaway MariaDB server for the suite: ``mariadbd`` on a free port of 127.0.0.1, its data
in a temporary directory, gone when it stops. Never the machine's own MariaDB (3306).

As a command, it runs another command with ``DATABASE_URL`` set to the server's database and
stops the server afterwards, whatever that command's exit (it exits with that command's code):

    python -m tests.mariadb_server [--database NAME] -- make pytest EXTRA=dev-mariadb

From Python, ``running_mariadb()`` yields the ``mysql://`` URL.

Only Debian's ``mariadbd``, ``mariadb-install-db`` and ``mariadb`` client are used, no Python
driver: the launcher runs before any virtualenv has mysqlclient.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

USER = "nrllm"
STARTUP_SECONDS = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client(socket_path: Path, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["mariadb", "--no-defaults", f"--socket={socket_path}", "--user=root", "-e", sql],
        capture_output=True,
        text=True,
        timeout=30,
    )


@contextlib.contextmanager
def running_mariadb(database: str = "nrllm") -> Iterator[str]:
    """Start a MariaDB server of its own, yield ``mysql://nrllm@127.0.0.1:<port>/<database>``."""
    for program in ("mariadbd", "mariadb-install-db", "mariadb"):
        if not shutil.which(program) and not Path("/usr/sbin", program).exists():
            raise RuntimeError(f"{program} is not installed (Debian: apt-get install mariadb-server)")
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    with tempfile.TemporaryDirectory(prefix="nrllm-mariadb-") as folder:
        base = Path(folder)
        data, socket_path, log = base / "data", base / "mysqld.sock", base / "mariadbd.log"
        # mariadbd refuses to run as root unless told so; the files are the current user's either way.
        user = getpass.getuser()
        installed = subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={data}",
                f"--user={user}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if installed.returncode:
            raise RuntimeError(f"mariadb-install-db failed:\n{installed.stdout}\n{installed.stderr}")
        port = _free_port()
        server = subprocess.Popen(
            [
                mariadbd,
                "--no-defaults",
                f"--datadir={data}",
                f"--socket={socket_path}",
                f"--pid-file={base / 'mariadbd.pid'}",
                f"--log-error={log}",
                f"--user={user}",
                "--bind-address=127.0.0.1",
                f"--port={port}",
                "--skip-name-resolve",
                # Disposable data: no need to pay for a flush per commit in the test run.
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=128M",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_unicode_ci",
                "--max-connections=500",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while _client(socket_path, "SELECT 1").returncode:
                if server.poll() is not None or time.monotonic() > deadline:
                    text = log.read_text() if log.exists() else ""
                    raise RuntimeError(f"mariadbd did not start on port {port}:\n{text[-4000:]}")
                time.sleep(0.2)
            # The suite's user may create the test database (test_<name>) and drop it again.
            made = _client(
                socket_path,
                f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci; "
                f"CREATE USER '{USER}'@'127.0.0.1'; "
                f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'127.0.0.1'; FLUSH PRIVILEGES;",
            )
            if made.returncode:
                raise RuntimeError(f"could not create the database: {made.stderr}")
            yield f"mysql://{USER}@127.0.0.1:{port}/{database}"
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default="nrllm")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run (after --)")
    options = parser.parse_args(argv)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("name the command to run after --")
    with running_mariadb(options.database) as url:
        print(f"MariaDB for the run: {url}", flush=True)
        return subprocess.run(command, env={**os.environ, "DATABASE_URL": url}).returncode


if __name__ == "__main__":
    sys.exit(main())
