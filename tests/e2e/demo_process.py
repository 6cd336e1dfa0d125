"""`make demo` as a user runs it, on free ports, with its whole process tree in view.

The tree is read from /proc (Linux): each process is known by its pid and start time, so
a pid reused after the test cannot pass for a survivor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.peers import ROOT

BANNER_END = "Ctrl-C stops everything."
START_SECONDS = 120.0
# Variables of the test run that would point the demo elsewhere than a user's shell does.
NOT_PASSED_ON = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY", "DEBUG", "ENV_FILE")


@dataclasses.dataclass(frozen=True)
class Proc:
    pid: int
    started: int  # clock ticks after boot (/proc/<pid>/stat field 22)
    command: str


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, start time) of a live process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ")".
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[19])


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def descendants(root: int) -> list[Proc]:
    """Every process below ``root`` now, children before grandchildren."""
    parents: dict[int, list[tuple[int, int]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents.setdefault(stat[0], []).append((int(entry), stat[1]))
    found: list[Proc] = []
    queue = [root]
    while queue:
        for pid, started in parents.get(queue.pop(0), []):
            found.append(Proc(pid, started, _command(pid)))
            queue.append(pid)
    return found


def alive(proc: Proc) -> bool:
    stat = _stat(proc.pid)
    return stat is not None and stat[1] == proc.started


def survivors(procs: list[Proc], seconds: float = 10.0) -> list[Proc]:
    """The processes still there after up to ``seconds`` (a parent may be reaping them)."""
    deadline = time.monotonic() + seconds
    while (left := [proc for proc in procs if alive(proc)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclasses.dataclass
class Demo:
    make: subprocess.Popen[bytes]
    site_port: int
    mcp_port: int
    auth_port: int
    protected_mcp_port: int
    banner: str
    console: Path
    #: The demo's home folder (HOME): where a gunicorn would put its default control socket.
    home: Path

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.site_port, self.mcp_port, self.auth_port, self.protected_mcp_port)

    def tree(self) -> list[Proc]:
        return descendants(self.make.pid)

    def whole_tree(self, count: int, seconds: float = 30.0) -> list[Proc]:
        """The tree once it holds ``count`` processes (or as it is after ``seconds``).

        The banner follows the listening ports, and a gunicorn master listens before it forks
        its worker: for a moment after the banner a worker may not exist yet.
        """
        deadline = time.monotonic() + seconds
        tree = self.tree()
        while len(tree) < count and time.monotonic() < deadline:
            time.sleep(0.1)
            tree = self.tree()
        return tree

    def python(self) -> Proc:
        """The demo's own process: make's only child (the recipe execs it)."""
        (child,) = [proc for proc in self.tree() if _stat(proc.pid) == (self.make.pid, proc.started)]
        assert "project.demo" in child.command, child.command
        return child

    def banner_value(self, label: str) -> str:
        (line,) = [line for line in self.banner.splitlines() if line.strip().startswith(label)]
        return line.split(label, 1)[1].strip()

    def console_text(self) -> str:
        return self.console.read_text(errors="replace")

    def stdout_after_banner(self, seconds: float = 10.0) -> str:
        """What make's stdout carried after the banner, up to its end (once the tree is gone)."""
        assert self.make.stdout is not None
        deadline = time.monotonic() + seconds
        text = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.make.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.make.stdout.fileno(), 65536)
                if not chunk:
                    break
                text += chunk
        return text.decode(errors="replace")


def demo_env(
    var_dir: Path, site_port: int, mcp_port: int, auth_port: int, protected_mcp_port: int
) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in NOT_PASSED_ON and not name.startswith(("MAKE", "MFLAGS", "PYTEST"))
    }
    # A home of its own, and no runtime folder: what the demo leaves in a home is seen, and
    # the tester's own home is left alone.
    env.pop("XDG_RUNTIME_DIR", None)
    env.update(
        HOME=str(var_dir / "home"),
        DEMO_VAR_DIR=str(var_dir),
        DEMO_SITE_PORT=str(site_port),
        DEMO_MCP_PORT=str(mcp_port),
        DEMO_AUTH_PORT=str(auth_port),
        DEMO_PROTECTED_MCP_PORT=str(protected_mcp_port),
    )
    return env


def _this_venv() -> list[str]:
    """The virtualenv running the tests (CI's Django 6 job has its own), for make's VENV."""
    return [f"VENV={sys.prefix}"] if sys.prefix != sys.base_prefix else []


def _read_banner(make: subprocess.Popen[bytes], console: Path) -> str:
    assert make.stdout is not None
    deadline = time.monotonic() + START_SECONDS
    text = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([make.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(make.stdout.fileno(), 65536)
            text += chunk
            if BANNER_END.encode() in text:
                return text.decode()
            if not chunk:
                break
        elif make.poll() is not None:
            break
    console_text = console.read_text(errors="replace")
    raise AssertionError(f"no banner within {START_SECONDS:g} s: {text!r}\n{console_text}")


@contextlib.contextmanager
def running_demo(var_dir: Path, ports: tuple[int, ...] | None = None) -> Iterator[Demo]:
    """``make demo`` in a session of its own (as a terminal's job is), killed with its whole
    tree afterwards whatever the test did; on ``ports`` (a Demo's, to run it again) or free ones."""
    site_port, mcp_port, auth_port, protected_mcp_port = ports or free_ports(4)
    console = var_dir / f"console-{site_port}.log"
    (var_dir / "home").mkdir(exist_ok=True)
    with console.open("wb") as sink:
        make = subprocess.Popen(
            ["make", "--no-print-directory", "demo", *_this_venv()],
            cwd=ROOT,
            env=demo_env(var_dir, site_port, mcp_port, auth_port, protected_mcp_port),
            stdout=subprocess.PIPE,
            stderr=sink,
            start_new_session=True,
        )
    seen: list[Proc] = []
    try:
        banner = _read_banner(make, console)
        demo = Demo(
            make, site_port, mcp_port, auth_port, protected_mcp_port, banner, console, var_dir / "home"
        )
        seen = demo.tree()
        yield demo
    finally:
        if make.poll() is None:
            seen += descendants(make.pid)
            make.terminate()
            try:
                make.wait(timeout=30)
            except subprocess.TimeoutExpired:
                make.kill()
                make.wait(timeout=30)
        for proc in survivors(seen, seconds=0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        assert make.stdout is not None
        make.stdout.close()
