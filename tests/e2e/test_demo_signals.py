"""`make demo` stops every child on SIGTERM, SIGHUP and SIGINT, whoever receives it.

Each test starts the real demo (make, project.demo, the authorization server with its
gunicorn worker, the OAuth-protected MCP server, the demo MCP server, gunicorn and its
worker) on free ports, notes its whole process tree, sends one signal, and then requires
make to exit, every process of the tree to be gone, all four ports to be free, and the demo to
end with one line saying so; a clean stop is never reported by make as a failed recipe.

The tests set the signal dispositions they rely on themselves (``default_stop_signals``): a
run started in the background by a script inherits SIGINT ignored, and so would make.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from project.demo import STOP_WAIT_SECONDS, STOPPED

from .demo_process import Demo, port_open, running_demo, survivors

# A cold `make demo` (a fresh SQLite migrated) on a busy 2-core machine can take a minute.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

EXIT_SECONDS = 60.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def default_stop_signals() -> Iterator[None]:
    """Children started inside see SIGINT, SIGTERM and SIGHUP with their default effect, whatever
    this run inherited; on leaving, this process has its own dispositions back.

    A non-interactive shell starts a background job (``make test &`` in a script) with SIGINT
    ignored; an ignored signal stays ignored across fork and exec, and make then ignores the
    Ctrl-C these tests send it. A handler installed here (rather than SIG_IGN) is reset to the
    default in a child at exec; a blocked signal would be inherited as blocked, so none is.
    """
    changed = {}
    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) == signal.SIG_IGN:
            # SIGINT: Python's usual KeyboardInterrupt; the others: the system's default.
            handler = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
            changed[signum] = signal.signal(signum, handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for signum, previous in changed.items():
            signal.signal(signum, previous)


@pytest.fixture(autouse=True)
def _stop_signals_default() -> Iterator[None]:
    with default_stop_signals():
        yield


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo folder for the module: the database is migrated once, not per test."""
    return tmp_path_factory.mktemp("demo-var")


def _name(signum: int) -> str:
    return signal.Signals(signum).name


def _stop_and_check(demo: Demo, send: str, signum: int) -> str:
    """Send ``signum`` the way ``send`` names; return make's console once all is checked."""
    tree = demo.whole_tree(7)
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
    # Neither gunicorn (the site, the authorization server) listens on a control socket in the
    # home folder, where they would clash with each other and with a site's gunicorn.
    assert not (demo.home / ".gunicorn").exists(), sorted(demo.home.rglob("*"))
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
    # One line says it, and it is the last; make reports no failed recipe ("*** [demo] ...").
    said = demo.stdout_after_banner().strip().splitlines()
    assert said[-1:] == [f"Stopped on {_name(signum)}: {STOPPED}."], said
    console = demo.console_text()
    assert "***" not in console, console
    return console


def test_sigterm_to_make_stops_every_child(var_dir: Path) -> None:
    """SIGTERM to `make demo` (a process manager, `timeout`): make hands it to the demo, which
    stops gunicorn with its worker, both MCP servers and the authorization server with its
    worker and exits 0; make, signalled itself, then dies of the signal (make's own rule)."""
    with running_demo(var_dir) as demo:
        _stop_and_check(demo, "make", signal.SIGTERM)
        assert demo.make.returncode == -signal.SIGTERM


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=_name)
def test_a_stop_signal_to_the_demo_process_stops_every_child_and_exits_zero(
    var_dir: Path, signum: int
) -> None:
    """SIGTERM, SIGHUP or SIGINT to the python process alone: it stops its children, says so,
    and exits 0, and so does make."""
    with running_demo(var_dir) as demo:
        _stop_and_check(demo, "python", signum)
        assert demo.make.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT], ids=_name)
def test_a_terminal_hang_up_or_ctrl_c_stops_every_child(var_dir: Path, signum: int) -> None:
    """SIGHUP (a closed terminal) or SIGINT (Ctrl-C) to the foreground process group, make and
    the demo together: everything stops, the demo says so, and make exits of the signal without
    reporting a failed recipe."""
    with running_demo(var_dir) as demo:
        _stop_and_check(demo, "group", signum)
        assert demo.make.returncode == -signum


def _signals_of_a_child(field: str) -> set[int]:
    """The signals a freshly started child has in ``field`` (SigIgn, SigBlk) of /proc/<pid>/status."""
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, check=True).stdout
    (mask,) = [line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:")]
    return {signum for signum in STOP_SIGNALS if int(mask, 16) & (1 << (signum - 1))}


def test_children_start_with_default_stop_signals_even_when_this_run_ignores_them() -> None:
    """With SIGINT, SIGTERM and SIGHUP ignored in this process (a script's background job), a child
    started outside default_stop_signals() inherits them ignored (the failure this prevents); one
    started inside has none ignored or blocked; afterwards this process ignores them again."""
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        assert _signals_of_a_child("SigIgn") == set(STOP_SIGNALS)
        with default_stop_signals():
            assert _signals_of_a_child("SigIgn") == set()
            assert _signals_of_a_child("SigBlk") == set()
        assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in STOP_SIGNALS)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
