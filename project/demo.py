"""`make demo`: migrate, seed an admin and a demo MCP server, and serve the site.

Every child runs in a session of its own, so a signal meant for the demo reaches only
this process, which then stops each child's whole process group once and cleanly:
SIGINT (Ctrl-C), SIGTERM (a process manager, ``timeout``, or make, which passes its own
SIGTERM on to its recipe) and SIGHUP (a closed terminal) all end with no child left.

The site's environment is written to ``var/demo.env``; ``ENV_FILE=var/demo.env`` in front
of any ``manage.py`` command runs it against the demo (project/settings.py reads it).

Environment: ``DEMO_SITE_PORT`` (8000), ``DEMO_MCP_PORT`` (8765), ``DEMO_VAR_DIR`` (var/),
``DATABASE_URL`` (SQLite in the var folder when unset).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# gunicorn's and uvicorn's own graceful shutdown is bounded by this many seconds; the
# demo waits a little longer for each child before it kills the child's process group.
GRACE_SECONDS = 3
STOP_WAIT_SECONDS = 10.0
POLL_SECONDS = 0.2


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    site_port: int
    mcp_port: int
    var_dir: Path

    @classmethod
    def from_environ(cls) -> DemoConfig:
        return cls(
            site_port=int(os.environ.get("DEMO_SITE_PORT", "8000")),
            mcp_port=int(os.environ.get("DEMO_MCP_PORT", "8765")),
            var_dir=Path(os.environ.get("DEMO_VAR_DIR") or BASE_DIR / "var").resolve(),
        )

    @property
    def env_file(self) -> Path:
        return self.var_dir / "demo.env"


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP, noted for the main loop once children may exist.

    Noted rather than raised: an exception between ``Popen`` returning and the child being
    recorded would lose the child. The main loop polls ``received``.
    """

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def ignore(self) -> None:
        """A second signal must not cut the clean-up short; it is bounded by its own timeouts."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)

    def exit_as_received(self) -> None:
        """Die of the signal that stopped us, so make and shells report it as that signal."""
        if self.received is not None:
            signal.signal(self.received, signal.SIG_DFL)
            os.kill(os.getpid(), self.received)


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait_for_port(
    port: int, child: subprocess.Popen[bytes], stop: StopSignals, seconds: float = 30.0
) -> bool:
    """True once ``child`` listens on ``port``; False if it exited or a stop signal came first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if stop.received is not None or child.poll() is not None:
            return False
        if _port_open(port):
            return True
        time.sleep(0.1)
    raise SystemExit(f"nothing is listening on 127.0.0.1:{port} after {seconds:g} s")


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, never readable by others even for a moment."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def _kept_token(path: Path, nbytes: int) -> str:
    """A random token made once per checkout and kept in the ignored var folder."""
    if not path.exists():
        _write_private(path, secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def demo_environment(config: DemoConfig) -> dict[str, str]:
    """What the demo site's settings read, every value explicit (written to the env file)."""
    database = os.environ.get("DATABASE_URL") or f"sqlite:///{config.var_dir / 'demo.sqlite3'}"
    return {
        "DEBUG": "true",
        "SECRET_KEY": _kept_token(config.var_dir / "demo-secret-key", 40),
        "DATABASE_URL": database,
        # The demo MCP server is on loopback, which nr_llm refuses unless told otherwise.
        "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true",
    }


def write_env_file(config: DemoConfig, environment: dict[str, str]) -> None:
    lines = [
        "# Written by `make demo`: the demo site's environment (it holds the demo's SECRET_KEY).",
        f"# Any manage.py command against the demo: {manage_line(config)}",
        *(f"{name}={shlex.quote(value)}" for name, value in environment.items()),
    ]
    _write_private(config.env_file, "\n".join(lines) + "\n")


def _shown(path: Path) -> str:
    """A path as the user types it: relative when inside the checkout they run make in."""
    if Path.cwd() == BASE_DIR and path.is_relative_to(BASE_DIR):
        return str(path.relative_to(BASE_DIR))
    return str(path)


def manage_line(config: DemoConfig, command: str = "mcp_import --all") -> str:
    env_file = shlex.quote(_shown(config.env_file))
    python = shlex.quote(_shown(Path(sys.executable)))
    manage = shlex.quote(_shown(BASE_DIR / "manage.py"))
    return f"ENV_FILE={env_file} {python} {manage} {command}"


def _seed(config: DemoConfig) -> str:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from nr_llm.models import DataClass, McpServer

    call_command("migrate", verbosity=0)
    password = _kept_token(config.var_dir / "demo-admin-password", 12)
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(
        username="admin", defaults={"is_staff": True, "is_superuser": True, "email": "admin@example.invalid"}
    )
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    McpServer.objects.update_or_create(
        identifier="demo",
        defaults={
            "name": "Demo MCP server",
            "description": "The official Python MCP SDK, started by `make demo` on 127.0.0.1.",
            "url": f"http://127.0.0.1:{config.mcp_port}/mcp",
            "data_class": DataClass.PUBLIC_CONTENT,
            "enabled": True,
        },
    )
    return password


def _commands(config: DemoConfig) -> list[list[str]]:
    mcp_server = [
        sys.executable,
        "-m",
        "project.demo_mcp_server",
        "--port",
        str(config.mcp_port),
        "--graceful-timeout",
        str(GRACE_SECONDS),
    ]
    # gunicorn behind the disconnect-aware WSGI wrapper, not runserver: runserver cannot
    # tell a client that left from one that waits (docs/observability.md).
    site = [
        sys.executable,
        "-m",
        "gunicorn",
        "project.wsgi:application",
        "--bind",
        f"127.0.0.1:{config.site_port}",
        "--worker-class",
        "gthread",
        "--threads",
        "4",
        "--graceful-timeout",
        str(GRACE_SECONDS),
    ]
    return [mcp_server, site]


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each child's process group (a gunicorn master and its workers), then SIGKILL
    to any group whose leader is still there after STOP_WAIT_SECONDS."""
    for child in reversed(children):
        if child.poll() is None:
            # Each child leads a session of its own: its pid is its process group's id.
            _signal_group(child.pid, signal.SIGTERM)
    for child in reversed(children):
        try:
            child.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(child.pid, signal.SIGKILL)
            child.wait(timeout=STOP_WAIT_SECONDS)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already gone
        os.killpg(pgid, signum)


def _banner(config: DemoConfig, password: str) -> str:
    site = f"http://127.0.0.1:{config.site_port}"
    return (
        "\n"
        f"  nr-llm demo is up:  {site}/admin/\n"
        f"  login:              admin / {password}\n"
        f"  demo MCP server:    http://127.0.0.1:{config.mcp_port}/mcp (seeded as 'demo')\n"
        f"  watch a 499:        curl -m 1 '{site}/demo/slow/?seconds=5'\n"
        f"  manage.py:          {manage_line(config)}\n"
        f"                      (any manage.py command; the environment is in {_shown(config.env_file)})\n"
        "  Ctrl-C stops everything.\n"
    )


def _serve(
    config: DemoConfig, password: str, children: list[subprocess.Popen[bytes]], stop: StopSignals
) -> subprocess.Popen[bytes] | None:
    """Start the children in order; return the one that exited, or None on a stop signal."""
    for command, port in zip(_commands(config), (config.mcp_port, config.site_port), strict=True):
        # A session of its own: a terminal's Ctrl-C or hang-up reaches only this process,
        # which stops each child once and in order.
        child = subprocess.Popen(command, cwd=BASE_DIR, start_new_session=True)
        children.append(child)
        if not _wait_for_port(port, child, stop):
            return child if child.poll() is not None else None
    print(_banner(config, password), flush=True)
    while stop.received is None:
        for child in children:
            if child.poll() is not None:
                return child
        time.sleep(POLL_SECONDS)
    return None


def main() -> None:
    config = DemoConfig.from_environ()
    config.var_dir.mkdir(parents=True, exist_ok=True)
    for port in (config.mcp_port, config.site_port):
        if _port_open(port):
            raise SystemExit(f"127.0.0.1:{port} is in use; set DEMO_MCP_PORT / DEMO_SITE_PORT to free ports.")
    environment = demo_environment(config)
    os.environ.update(environment)
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    write_env_file(config, environment)
    # Until a child exists the signals keep their default effect: nothing is left behind.
    try:
        password = _seed(config)
    except KeyboardInterrupt:
        raise SystemExit(130) from None

    stop = StopSignals()
    stop.install()
    children: list[subprocess.Popen[bytes]] = []
    try:
        exited = _serve(config, password, children, stop)
    finally:
        stop.ignore()
        _stop(children)
    stop.exit_as_received()
    if exited is not None:
        command = shlex.join(str(part) for part in exited.args)  # type: ignore[union-attr]
        raise SystemExit(f"the demo stopped: {command} exited with {exited.returncode}")


if __name__ == "__main__":
    main()
