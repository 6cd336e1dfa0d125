"""`make demo` stops every child on SIGTERM, SIGHUP and SIGINT, whoever receives it.

Each test starts the real demo (make, project.demo, the authorization server with its
gunicorn worker, the OAuth-protected MCP server, the demo MCP server, gunicorn and its
worker) on free ports, notes its whole process tree, sends one signal, and then requires
make to exit, every process of the tree to be gone and all four ports to be free.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from project.demo import STOP_WAIT_SECONDS

from .demo_process import Demo, port_open, running_demo, survivors

# A cold `make demo` (a fresh SQLite migrated) on a busy 2-core machine can take a minute.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

EXIT_SECONDS = 60.0


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo folder for the module: the database is migrated once, not per test."""
    return tmp_path_factory.mktemp("demo-var")


def _name(signum: int) -> str:
    return signal.Signals(signum).name


def _stop_and_check(demo: Demo, send: str, signum: int) -> str:
    """Send ``signum`` the way ``send`` names; return make's console once all is checked."""
    tree = demo.tree()
    commands = " | ".join(proc.command for proc in tree)
    # Below make: project.demo -> (authorization server -> worker, protected MCP server, demo
    # MCP server, gunicorn master -> worker), seven processes: nothing missing.
    for part in (
        "tests.peers.oauth_server",
        "tests.peers.oauth_mcp_server",
        "project.demo_mcp_server",
        "gunicorn",
    ):
        assert part in commands, commands
    assert len(tree) >= 7, commands
    started = time.monotonic()
    if send == "make":
        demo.make.send_signal(signum)
    elif send == "python":
        os.kill(demo.python().pid, signum)
    else:  # a terminal: the whole foreground process group (make and the demo)
        os.killpg(demo.make.pid, signum)
    demo.make.wait(timeout=EXIT_SECONDS)
    elapsed = time.monotonic() - started
    assert survivors(tree) == []
    assert [port for port in demo.ports if port_open(port)] == []
    # Under STOP_WAIT_SECONDS: every child stopped on its SIGTERM, none had to be killed.
    assert elapsed < STOP_WAIT_SECONDS
    return demo.console_text()


def test_sigterm_to_make_stops_every_child(var_dir: Path) -> None:
    """SIGTERM to `make demo` (a process manager, `timeout`): make hands it to the demo, which
    stops gunicorn with its worker, both MCP servers and the authorization server with its
    worker; make then dies of the signal itself."""
    with running_demo(var_dir) as demo:
        _stop_and_check(demo, "make", signal.SIGTERM)
        assert demo.make.returncode == -signal.SIGTERM


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=_name)
def test_a_stop_signal_to_the_demo_process_stops_every_child(var_dir: Path, signum: int) -> None:
    """SIGTERM, SIGHUP or SIGINT to the python process alone: it stops its children, then dies
    of that signal, which make reports as the recipe's failure."""
    with running_demo(var_dir) as demo:
        console = _stop_and_check(demo, "python", signum)
        assert demo.make.returncode == 2
        assert f"demo] {signal.strsignal(signum)}" in console


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT], ids=_name)
def test_a_terminal_hang_up_or_ctrl_c_stops_every_child(var_dir: Path, signum: int) -> None:
    """SIGHUP (a closed terminal) or SIGINT (Ctrl-C) to the foreground process group, make and
    the demo together: everything stops and make exits."""
    with running_demo(var_dir) as demo:
        _stop_and_check(demo, "group", signum)
        assert demo.make.returncode != 0
